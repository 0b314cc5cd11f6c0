#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| airlock_fuzz::prepare_arguments(data));
