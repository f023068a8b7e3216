//! tessera-blob's HTTP/1.1 response parser on arbitrary bytes: it never panics and a
//! body it decodes never exceeds the cap it was given, however the reads split it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera_blob::fuzzing::parse_response;

fuzz_target!(|data: &[u8]| {
    // The first two bytes choose the read size and the body cap; the rest is the
    // response as the server sent it.
    let [split, cap, response @ ..] = data else {
        return;
    };
    let limit = usize::from(*cap) * 16;
    if let Ok(body) = parse_response(response, usize::from(*split), limit) {
        assert!(body.len() <= limit, "{} bytes under a cap of {limit}", body.len());
    }
});
