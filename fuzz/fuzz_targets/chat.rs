#![cfg_attr(fuzzing, no_main)]
chat_peg_fuzz::fuzz_target!(chat_peg_fuzz::check_chat);
