//! A minimal Hugging Face-like renderer for tests only (the real one is `crate::template`).

use minijinja::value::{Kwargs, Value};
use minijinja::{Environment, Error, ErrorKind};

use super::Render;

/// Renders one template source with jinja2-like settings.
pub struct ShimTemplate {
    env: Environment<'static>,
}

fn py_json(v: &serde_json::Value, out: &mut String) {
    match v {
        serde_json::Value::Object(m) => {
            out.push('{');
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&serde_json::to_string(k).unwrap());
                out.push_str(": ");
                py_json(v, out);
            }
            out.push('}');
        }
        serde_json::Value::Array(a) => {
            out.push('[');
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                py_json(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&serde_json::to_string(other).unwrap()),
    }
}

impl ShimTemplate {
    /// Compiles `source`.
    pub fn new(source: &str) -> Result<ShimTemplate, String> {
        let mut env = Environment::new();
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(true)
                .lstrip_blocks(true)
                .build()
                .map_err(|e| e.to_string())?,
        );
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_filter("tojson", |v: Value, _k: Kwargs| -> Result<Value, Error> {
            let j: serde_json::Value = serde_json::to_value(&v)
                .map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
            let mut s = String::new();
            py_json(&j, &mut s);
            Ok(Value::from_safe_string(s))
        });
        env.add_function("raise_exception", |msg: String| -> Result<Value, Error> {
            Err(Error::new(ErrorKind::InvalidOperation, msg))
        });
        env.add_function("strftime_now", |_f: String| -> Value { Value::from("01 Jan 2025") });
        env.add_template_owned("t", source.to_owned()).map_err(|e| e.to_string())?;
        Ok(ShimTemplate { env })
    }
}

impl Render for ShimTemplate {
    fn render(&self, ctx: &serde_json::Value) -> Result<String, String> {
        let t = self.env.get_template("t").map_err(|e| e.to_string())?;
        t.render(minijinja::value::Serde(ctx)).map_err(|e| format!("{e:#}"))
    }
}
