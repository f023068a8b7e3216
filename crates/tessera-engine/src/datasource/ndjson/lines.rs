//! Cutting a stream of chunks into the lines a partition owns.
//!
//! A partition scanning bytes `[start, end)` of a file owns exactly the lines whose first
//! byte lies in that range; the line straddling `start` belongs to the previous
//! partition and the last owned line may run past `end`. Lines inside one chunk are
//! handed out as slices of it (no copy); only a line split across two chunks is copied.

use bytes::Bytes;

use super::read::Chunk;

/// One line (without its `\n`) and where it came from.
#[derive(Debug)]
pub struct Line<'a> {
    /// The line's bytes.
    pub bytes: &'a [u8],
    /// The chunk holding the line, when it lies wholly inside one (for zero-copy use),
    /// and the line's position in it.
    pub chunk: Option<(&'a Bytes, usize)>,
    /// Offset of the line's first byte in the (decompressed) file.
    pub offset: u64,
    /// 0-based number of the line among the lines this partition owns.
    pub index: u64,
    /// True when the line is known to be valid UTF-8 (checked with its whole chunk).
    pub utf8_checked: bool,
}

/// Splits the chunks of one partition into owned lines.
#[derive(Debug)]
pub struct LineSplitter {
    end: u64,
    /// Still skipping the tail of the line that began before `start`.
    seeking: bool,
    carry: Vec<u8>,
    carry_offset: Option<u64>,
    done: bool,
    lines: u64,
    first_line_offset: Option<u64>,
}

impl LineSplitter {
    /// A splitter for the partition `[start, end)`. When `start > 0` the chunks must
    /// begin at `start - 1`, so that a line starting exactly at `start` is recognized.
    pub fn new(start: u64, end: u64) -> Self {
        Self {
            end,
            seeking: start > 0,
            carry: Vec::new(),
            carry_offset: None,
            done: false,
            lines: 0,
            first_line_offset: (start == 0).then_some(0),
        }
    }

    /// True once the partition has all its lines; later chunks are not needed.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Offset of the first owned line, once known (`None` while seeking).
    pub fn first_line_offset(&self) -> Option<u64> {
        self.first_line_offset
    }

    /// Feeds the next chunk, calling `on_line` for each completed owned line.
    pub fn push<E>(
        &mut self,
        chunk: &Chunk,
        mut on_line: impl FnMut(Line<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.done {
            return Ok(());
        }
        let data = &chunk.bytes[..];
        let mut i = 0;
        if self.seeking {
            match memchr::memchr(b'\n', data) {
                Some(p) => {
                    i = p + 1;
                    self.seeking = false;
                    self.first_line_offset = Some(chunk.offset + i as u64);
                }
                None => return Ok(()),
            }
        }
        if let Some(carry_offset) = self.carry_offset {
            match memchr::memchr(b'\n', &data[i..]) {
                Some(p) => {
                    self.carry.extend_from_slice(&data[i..i + p]);
                    i += p + 1;
                    let index = self.next_index();
                    let carry = std::mem::take(&mut self.carry);
                    self.carry_offset = None;
                    on_line(Line {
                        bytes: &carry,
                        chunk: None,
                        offset: carry_offset,
                        index,
                        utf8_checked: false,
                    })?;
                    self.carry = carry;
                    self.carry.clear();
                }
                None => {
                    self.carry.extend_from_slice(&data[i..]);
                    return Ok(());
                }
            }
        }
        // One UTF-8 check for all complete lines of the chunk instead of one per line.
        let utf8_checked = memchr::memrchr(b'\n', &data[i..])
            .is_some_and(|last| simdutf8::basic::from_utf8(&data[i..i + last]).is_ok());
        loop {
            let offset = chunk.offset + i as u64;
            if offset >= self.end {
                self.done = true;
                return Ok(());
            }
            match memchr::memchr(b'\n', &data[i..]) {
                Some(p) => {
                    let index = self.next_index();
                    on_line(Line {
                        bytes: &data[i..i + p],
                        chunk: Some((&chunk.bytes, i)),
                        offset,
                        index,
                        utf8_checked,
                    })?;
                    i += p + 1;
                }
                None => {
                    if i < data.len() {
                        self.carry.extend_from_slice(&data[i..]);
                        self.carry_offset = Some(offset);
                    }
                    return Ok(());
                }
            }
        }
    }

    /// Ends the input: a last line without a trailing newline is handed out.
    pub fn finish<E>(
        &mut self,
        mut on_line: impl FnMut(Line<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.done = true;
        if let Some(offset) = self.carry_offset.take() {
            let index = self.next_index();
            let carry = std::mem::take(&mut self.carry);
            on_line(Line {
                bytes: &carry,
                chunk: None,
                offset,
                index,
                utf8_checked: false,
            })?;
        }
        Ok(())
    }

    fn next_index(&mut self) -> u64 {
        self.lines += 1;
        self.lines - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits `data` into partitions at `cuts` and chunks of `chunk_size`, and returns
    /// every partition's lines with their offsets.
    fn split(data: &[u8], cuts: &[u64], chunk_size: usize) -> Vec<(u64, String)> {
        let mut bounds = vec![0u64];
        bounds.extend_from_slice(cuts);
        bounds.push(data.len() as u64);
        let mut out = Vec::new();
        for w in bounds.windows(2) {
            let (start, end) = (w[0], w[1]);
            let mut splitter = LineSplitter::new(start, end);
            let read_from = start.saturating_sub(1) as usize;
            let mut collect = |line: Line<'_>| -> Result<(), ()> {
                if let Some((chunk, pos)) = line.chunk {
                    assert_eq!(&chunk[pos..pos + line.bytes.len()], line.bytes);
                }
                assert_eq!(
                    &data[line.offset as usize..line.offset as usize + line.bytes.len()],
                    line.bytes
                );
                out.push((line.offset, String::from_utf8(line.bytes.to_vec()).unwrap()));
                Ok(())
            };
            for (k, piece) in data[read_from..].chunks(chunk_size).enumerate() {
                let chunk = Chunk {
                    offset: (read_from + k * chunk_size) as u64,
                    bytes: Bytes::copy_from_slice(piece),
                };
                splitter.push(&chunk, &mut collect).unwrap();
                if splitter.is_done() {
                    break;
                }
            }
            splitter.finish(&mut collect).unwrap();
        }
        out
    }

    fn expected(data: &[u8]) -> Vec<(u64, String)> {
        let text = std::str::from_utf8(data).unwrap();
        let mut out = Vec::new();
        let mut offset = 0u64;
        let mut parts: Vec<&str> = text.split('\n').collect();
        if text.ends_with('\n') {
            parts.pop();
        }
        for part in parts {
            out.push((offset, part.to_string()));
            offset += part.len() as u64 + 1;
        }
        out
    }

    #[test]
    fn every_line_is_owned_by_exactly_one_partition() {
        let data = b"{\"a\":1}\n\n{\"bb\":22}\nxyz\n{\"c\":333}\nlast-no-newline";
        let len = data.len() as u64;
        for chunk_size in [1, 2, 3, 7, 64] {
            for cut in 1..len {
                for cut2 in cut..len {
                    let got = split(data, &[cut, cut2], chunk_size);
                    assert_eq!(got, expected(data), "cuts {cut},{cut2} chunk {chunk_size}");
                }
            }
        }
    }

    #[test]
    fn trailing_newline_gives_no_extra_line() {
        let data = b"a\nb\n";
        assert_eq!(split(data, &[], 3), vec![(0, "a".into()), (2, "b".into())]);
        assert_eq!(split(data, &[2], 1), vec![(0, "a".into()), (2, "b".into())]);
    }
}
