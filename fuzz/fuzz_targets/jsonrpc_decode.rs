#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| airlock_fuzz::jsonrpc_decode(data));
