//! Client-side encryption at rest with AES-256-GCM (AnyBlob (Durner, Leis, Neumann: Exploiting Cloud Object Storage for High-Performance Analytics, VLDB 2023):
//! plain HTTP inside the region plus end-to-end AES costs far less CPU than HTTPS).
//!
//! Ciphertext layout of one object:
//!
//! ```text
//! header: "TSE1" (4 bytes) | object id (8 random bytes)
//! block i (i = 0..n): AES-256-GCM(plaintext[i*BLOCK .. (i+1)*BLOCK]) | tag (16 bytes)
//! ```
//!
//! Every block but the last holds [`BLOCK`] plaintext bytes; an empty object is one
//! empty block. Block `i`'s nonce is the object id followed by `i` (32-bit big endian),
//! so nonces never repeat under one key (a fresh random id per write). Its associated
//! data is the header, `i` (64-bit big endian) and a last-block flag, so blocks cannot
//! be moved, swapped between objects, or cut off at a block boundary unnoticed. Any
//! plaintext range maps to whole blocks, so ranged reads decrypt only what they fetch.

use std::ops::Range;

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

/// Plaintext bytes per encrypted block.
pub const BLOCK: u64 = 1024 * 1024;
/// Bytes of the object header.
pub const HEADER: u64 = 12;
/// Bytes of the authentication tag after each block.
const TAG: u64 = 16;
const MAGIC: &[u8; 4] = b"TSE1";
/// Blocks one object may have: the block index is 32 bits of the nonce.
const MAX_BLOCKS: u64 = 1 << 32;

/// Why encrypted bytes could not be turned back into plaintext.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CryptError {
    /// The object does not start with Tessera's encryption header.
    #[error("the object is not encrypted by Tessera (no TSE1 header)")]
    NotEncrypted,
    /// The object's size is impossible for the layout (cut short, or not encrypted).
    #[error("the encrypted object has an impossible size of {0} bytes")]
    BadSize(u64),
    /// A block failed authentication: wrong key, or the bytes were altered.
    #[error("block {0} failed authentication: wrong key or altered object")]
    Authentication(u64),
    /// The object is larger than the layout allows.
    #[error("the object is too large to encrypt ({0} bytes)")]
    TooLarge(u64),
    /// The system random number generator failed.
    #[error("no randomness for the object id")]
    Random,
}

/// A 256-bit key; never printed.
#[derive(Clone)]
pub struct EncryptionKey {
    key: [u8; 32],
}

impl std::fmt::Debug for EncryptionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EncryptionKey(<redacted>)")
    }
}

impl PartialEq for EncryptionKey {
    fn eq(&self, other: &Self) -> bool {
        // Every byte is compared, so the time does not depend on where keys differ.
        self.key
            .iter()
            .zip(&other.key)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

impl EncryptionKey {
    /// A key from its 32 bytes.
    pub fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    /// A key from 64 hexadecimal digits (as in a configuration file).
    pub fn from_hex(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.len() != 64 {
            return Err(format!(
                "an encryption key is 64 hex digits, not {}",
                text.len()
            ));
        }
        let mut key = [0u8; 32];
        for (i, byte) in key.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16)
                .map_err(|_| "an encryption key is hex digits only".to_string())?;
        }
        Ok(Self { key })
    }

    fn cipher(&self) -> LessSafeKey {
        LessSafeKey::new(
            UnboundKey::new(&AES_256_GCM, &self.key).expect("AES-256 takes a 32-byte key"),
        )
    }
}

fn blocks(plain: u64) -> u64 {
    plain.div_ceil(BLOCK).max(1)
}

/// The stored size of an object of `plain` bytes.
pub fn ciphertext_len(plain: u64) -> u64 {
    HEADER + plain + TAG * blocks(plain)
}

/// The plaintext size of a stored object of `cipher` bytes.
pub fn plaintext_len(cipher: u64) -> Result<u64, CryptError> {
    let body = cipher
        .checked_sub(HEADER + TAG)
        .ok_or(CryptError::BadSize(cipher))?;
    // All blocks but the last are full: body = plain + TAG * (blocks - 1).
    let full = body / (BLOCK + TAG);
    let rest = body % (BLOCK + TAG);
    let plain = if rest == 0 && full > 0 {
        // A last block of exactly BLOCK bytes, counted among the full ones.
        full * BLOCK
    } else {
        full * BLOCK + rest
    };
    if ciphertext_len(plain) == cipher {
        Ok(plain)
    } else {
        Err(CryptError::BadSize(cipher))
    }
}

fn nonce(id: &[u8], block: u64) -> Nonce {
    let mut bytes = [0u8; 12];
    bytes[..8].copy_from_slice(id);
    bytes[8..].copy_from_slice(&(block as u32).to_be_bytes());
    Nonce::assume_unique_for_key(bytes)
}

fn aad(header: &[u8], block: u64, last: bool) -> [u8; 21] {
    let mut bytes = [0u8; 21];
    bytes[..12].copy_from_slice(header);
    bytes[12..20].copy_from_slice(&block.to_be_bytes());
    bytes[20] = u8::from(last);
    bytes
}

/// Encrypts an object as its bytes arrive: full blocks are sealed as soon as more
/// bytes follow them, and the last block when the object is finished, so a writer
/// needs only one block of plaintext in memory.
pub struct Sealer {
    cipher: LessSafeKey,
    header: [u8; HEADER as usize],
    next_block: u64,
    pending: Vec<u8>,
    out: Vec<u8>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer")
            .field("next_block", &self.next_block)
            .finish_non_exhaustive()
    }
}

impl Sealer {
    /// Starts an object under a fresh random object id; the header is the first
    /// output.
    pub fn new(key: &EncryptionKey) -> Result<Self, CryptError> {
        let mut header = [0u8; HEADER as usize];
        header[..4].copy_from_slice(MAGIC);
        SystemRandom::new()
            .fill(&mut header[4..])
            .map_err(|_| CryptError::Random)?;
        Ok(Self {
            cipher: key.cipher(),
            header,
            next_block: 0,
            pending: Vec::with_capacity(BLOCK as usize),
            out: header.to_vec(),
        })
    }

    /// Adds plaintext.
    pub fn push(&mut self, mut data: &[u8]) -> Result<(), CryptError> {
        while !data.is_empty() {
            if self.pending.len() as u64 == BLOCK {
                // More bytes follow, so the held block is not the last.
                self.seal(false)?;
            }
            let take = (BLOCK as usize - self.pending.len()).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        Ok(())
    }

    /// Bytes sealed and not yet taken.
    pub fn output_len(&self) -> usize {
        self.out.len()
    }

    /// Takes the bytes sealed so far.
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// Seals the held bytes as the last block; returns the output not yet taken.
    pub fn finish(mut self) -> Result<Vec<u8>, CryptError> {
        self.seal(true)?;
        Ok(self.out)
    }

    fn seal(&mut self, last: bool) -> Result<(), CryptError> {
        let block = self.next_block;
        if block >= MAX_BLOCKS {
            return Err(CryptError::TooLarge(block.saturating_mul(BLOCK)));
        }
        let at = self.out.len();
        self.out.extend_from_slice(&self.pending);
        self.pending.clear();
        let tag = self
            .cipher
            .seal_in_place_separate_tag(
                nonce(&self.header[4..], block),
                Aad::from(aad(&self.header, block, last)),
                &mut self.out[at..],
            )
            .expect("sealing fits in memory");
        self.out.extend_from_slice(tag.as_ref());
        self.next_block += 1;
        Ok(())
    }
}

/// Encrypts a whole object under a fresh random object id.
pub fn encrypt(key: &EncryptionKey, plaintext: &[u8]) -> Result<Vec<u8>, CryptError> {
    let mut sealer = Sealer::new(key)?;
    sealer
        .out
        .reserve(ciphertext_len(plaintext.len() as u64) as usize);
    sealer.push(plaintext)?;
    let out = sealer.finish()?;
    debug_assert_eq!(out.len() as u64, ciphertext_len(plaintext.len() as u64));
    Ok(out)
}

/// Which stored bytes hold a plaintext range of an object of `plain` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CipherSpan {
    /// The stored byte range: whole blocks from `first_block`.
    pub stored: Range<u64>,
    /// The first block in `stored`.
    pub first_block: u64,
    /// Where the plaintext range starts in the decrypted blocks.
    pub skip: u64,
}

/// The whole blocks that hold `range` (within `0..plain`, not empty) of an object of
/// `plain` plaintext bytes.
pub fn span(range: &Range<u64>, plain: u64) -> CipherSpan {
    assert!(
        range.start < range.end && range.end <= plain,
        "the range is within the object"
    );
    let first_block = range.start / BLOCK;
    let last_block = (range.end - 1) / BLOCK;
    let start = HEADER + first_block * (BLOCK + TAG);
    let last_len = ((last_block + 1) * BLOCK).min(plain) - last_block * BLOCK;
    let end = HEADER + last_block * (BLOCK + TAG) + last_len + TAG;
    CipherSpan {
        stored: start..end,
        first_block,
        skip: range.start - first_block * BLOCK,
    }
}

/// Decrypts consecutive whole blocks starting at `first_block` of an object of
/// `plain` plaintext bytes whose header is `header`; returns their plaintext.
pub fn decrypt_blocks(
    key: &EncryptionKey,
    header: &[u8],
    first_block: u64,
    stored: &[u8],
    plain: u64,
) -> Result<Vec<u8>, CryptError> {
    if header.len() != HEADER as usize || &header[..4] != MAGIC {
        return Err(CryptError::NotEncrypted);
    }
    let cipher = key.cipher();
    let count = blocks(plain);
    let mut out = Vec::with_capacity(stored.len());
    let mut rest = stored;
    let mut block = first_block;
    while !rest.is_empty() {
        if block >= count {
            return Err(CryptError::BadSize(stored.len() as u64));
        }
        let len = (((block + 1) * BLOCK).min(plain) - block * BLOCK + TAG) as usize;
        if rest.len() < len {
            return Err(CryptError::BadSize(stored.len() as u64));
        }
        let mut sealed = rest[..len].to_vec();
        let opened = cipher
            .open_in_place(
                nonce(&header[4..], block),
                Aad::from(aad(header, block, block + 1 == count)),
                &mut sealed,
            )
            .map_err(|_| CryptError::Authentication(block))?;
        out.extend_from_slice(opened);
        rest = &rest[len..];
        block += 1;
    }
    Ok(out)
}

/// Decrypts a whole stored object.
pub fn decrypt(key: &EncryptionKey, stored: &[u8]) -> Result<Vec<u8>, CryptError> {
    let plain = plaintext_len(stored.len() as u64)?;
    let (header, blocks) = stored.split_at(HEADER as usize);
    decrypt_blocks(key, header, 0, blocks, plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> EncryptionKey {
        EncryptionKey::new([byte; 32])
    }

    fn data(len: u64) -> Vec<u8> {
        (0..len).map(|i| (i * 31 % 251) as u8).collect()
    }

    #[test]
    fn sizes_round_trip_around_block_boundaries() {
        for plain in [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK, 3 * BLOCK + 17] {
            assert_eq!(plaintext_len(ciphertext_len(plain)), Ok(plain), "{plain}");
        }
        assert!(plaintext_len(HEADER + TAG - 1).is_err());
        assert!(plaintext_len(HEADER + BLOCK + TAG + 5).is_err());
    }

    #[test]
    fn objects_and_ranges_decrypt_exactly() {
        let k = key(7);
        for plain in [0, 5, BLOCK, 2 * BLOCK + 333] {
            let original = data(plain);
            let stored = encrypt(&k, &original).unwrap();
            assert_eq!(stored.len() as u64, ciphertext_len(plain));
            assert_eq!(decrypt(&k, &stored).unwrap(), original);
            if plain == 0 {
                continue;
            }
            for range in [
                0..1,
                0..plain,
                plain / 2..plain,
                BLOCK.min(plain - 1)..plain,
            ] {
                let s = span(&range, plain);
                let got = decrypt_blocks(
                    &k,
                    &stored[..HEADER as usize],
                    s.first_block,
                    &stored[s.stored.start as usize..s.stored.end as usize],
                    plain,
                )
                .unwrap();
                let from = s.skip as usize;
                let len = (range.end - range.start) as usize;
                assert_eq!(
                    &got[from..from + len],
                    &original[range.start as usize..range.end as usize]
                );
            }
        }
    }

    #[test]
    fn wrong_keys_alterations_and_cuts_are_detected() {
        let original = data(2 * BLOCK + 10);
        let stored = encrypt(&key(1), &original).unwrap();
        assert_eq!(
            decrypt(&key(2), &stored),
            Err(CryptError::Authentication(0))
        );
        let mut altered = stored.clone();
        altered[HEADER as usize + 5] ^= 1;
        assert_eq!(
            decrypt(&key(1), &altered),
            Err(CryptError::Authentication(0))
        );
        // Cut after the second block: the new last block was not sealed as last.
        let cut = &stored[..(HEADER + 2 * (BLOCK + TAG)) as usize];
        assert_eq!(decrypt(&key(1), cut), Err(CryptError::Authentication(1)));
        let mut plain_text = original.clone();
        plain_text.truncate(100);
        assert!(decrypt(&key(1), &plain_text).is_err());
        // Two writes of the same bytes differ (fresh object ids).
        assert_ne!(encrypt(&key(1), &original).unwrap(), stored);
    }

    #[test]
    fn sealing_in_pieces_equals_sealing_at_once() {
        let k = key(5);
        for plain in [0, 1, BLOCK, BLOCK + 1, 3 * BLOCK - 7] {
            let original = data(plain);
            let mut sealer = Sealer::new(&k).unwrap();
            let mut stored = Vec::new();
            for piece in original.chunks(300_001) {
                sealer.push(piece).unwrap();
                stored.extend(sealer.take_output());
            }
            stored.extend(sealer.finish().unwrap());
            assert_eq!(stored.len() as u64, ciphertext_len(plain));
            assert_eq!(decrypt(&k, &stored).unwrap(), original, "{plain}");
        }
    }

    #[test]
    fn keys_parse_from_hex_and_never_print() {
        let k = EncryptionKey::from_hex(&"ab".repeat(32)).unwrap();
        assert_eq!(k, EncryptionKey::new([0xab; 32]));
        assert_eq!(format!("{k:?}"), "EncryptionKey(<redacted>)");
        assert!(EncryptionKey::from_hex("abc").is_err());
        assert!(EncryptionKey::from_hex(&"zz".repeat(32)).is_err());
    }
}
