//! A byte-level BPE tokenizer in the GPT-2 style:
//!
//! 1. pre-tokenize with a hand-written state machine (contractions, ` ?letters`, digit runs of
//!    at most three, ` ?punctuation`, whitespace),
//! 2. look each piece up in the vocabulary (fast path for common words),
//! 3. otherwise run BPE merges over its bytes (slow path for rare words).
//!
//! The vocabulary and merge table are built deterministically from the word list in `text.rs`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a, good enough for short byte strings and dependency-free.
#[derive(Default)]
pub struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
    fn write_u32(&mut self, n: u32) {
        self.write(&n.to_le_bytes());
    }
    fn write_u64(&mut self, n: u64) {
        self.write(&n.to_le_bytes());
    }
    fn write_usize(&mut self, n: usize) {
        self.write(&(n as u64).to_le_bytes());
    }
}

pub type FnvBuild = BuildHasherDefault<Fnv>;

/// A byte-to-byte normalization step (the pipeline is configurable at run time).
pub trait Normalizer {
    fn name(&self) -> &'static str;
    /// Returns the normalized byte, or `None` to drop it.
    fn apply(&self, b: u8) -> Option<u8>;
}

/// Drops ASCII control characters other than `\t`, `\n` and `\r`.
pub struct StripControl;
impl Normalizer for StripControl {
    fn name(&self) -> &'static str {
        "strip-control"
    }
    fn apply(&self, b: u8) -> Option<u8> {
        match b {
            b'\t' | b'\n' | b'\r' => Some(b),
            0..=0x1f | 0x7f => None,
            _ => Some(b),
        }
    }
}

/// Maps tabs, `\r`, vertical tab and form feed to spaces.
pub struct UnifySpaces;
impl Normalizer for UnifySpaces {
    fn name(&self) -> &'static str {
        "unify-spaces"
    }
    fn apply(&self, b: u8) -> Option<u8> {
        match b {
            b'\t' | b'\r' | 0x0b | 0x0c => Some(b' '),
            _ => Some(b),
        }
    }
}

/// ASCII lowercasing.
pub struct Lowercase;
impl Normalizer for Lowercase {
    fn name(&self) -> &'static str {
        "lowercase"
    }
    fn apply(&self, b: u8) -> Option<u8> {
        Some(b.to_ascii_lowercase())
    }
}

/// Splits normalized text into pieces that are looked up / BPE-encoded independently.
pub trait PreTokenizer {
    fn name(&self) -> &'static str;
    /// End of the piece starting at `i` (`i < t.len()`; must return > `i`).
    fn next_piece(&self, t: &[u8], i: usize) -> usize;
}

/// The GPT-2 split pattern, hand-compiled.
pub struct Gpt2Split;
impl PreTokenizer for Gpt2Split {
    fn name(&self) -> &'static str {
        "gpt2"
    }
    fn next_piece(&self, t: &[u8], i: usize) -> usize {
        next_piece(t, i)
    }
}

/// Whitespace-delimited words (the space is attached to the following word).
pub struct WhitespaceSplit;
impl PreTokenizer for WhitespaceSplit {
    fn name(&self) -> &'static str {
        "whitespace"
    }
    fn next_piece(&self, t: &[u8], i: usize) -> usize {
        let mut j = i + 1;
        while j < t.len() && !t[j].is_ascii_whitespace() {
            j += 1;
        }
        j
    }
}

/// Normalizer chain and pre-tokenizer, chosen by name.
pub struct Pipeline {
    pub normalizers: Vec<Box<dyn Normalizer>>,
    pub pre: Box<dyn PreTokenizer>,
}

impl Pipeline {
    /// `spec` is e.g. `"strip-control,unify-spaces/gpt2"`.
    pub fn parse(spec: &str) -> Result<Pipeline, String> {
        let (norms, pre) = spec.split_once('/').unwrap_or((spec, "gpt2"));
        let mut normalizers: Vec<Box<dyn Normalizer>> = Vec::new();
        for n in norms.split(',').filter(|n| !n.is_empty()) {
            normalizers.push(match n {
                "strip-control" => Box::new(StripControl),
                "unify-spaces" => Box::new(UnifySpaces),
                "lowercase" => Box::new(Lowercase),
                other => return Err(format!("unknown normalizer {other:?}")),
            });
        }
        let pre: Box<dyn PreTokenizer> = match pre {
            "gpt2" => Box::new(Gpt2Split),
            "whitespace" => Box::new(WhitespaceSplit),
            other => return Err(format!("unknown pre-tokenizer {other:?}")),
        };
        Ok(Pipeline { normalizers, pre })
    }

    pub fn describe(&self) -> String {
        let n: Vec<&str> = self.normalizers.iter().map(|n| n.name()).collect();
        format!("{}/{}", n.join(","), self.pre.name())
    }

    pub fn normalize(&self, text: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len());
        'bytes: for &b in text {
            let mut b = b;
            for n in &self.normalizers {
                match n.apply(b) {
                    Some(x) => b = x,
                    None => continue 'bytes,
                }
            }
            out.push(b);
        }
        out
    }
}

/// Receives the token stream (a histogram, a buffer for the model, ...).
pub trait TokenSink {
    fn token(&mut self, id: u32);
}

/// Collects token ids.
impl TokenSink for Vec<u32> {
    fn token(&mut self, id: u32) {
        self.push(id);
    }
}

/// Counts tokens and checksums the stream.
pub struct Histogram {
    pub counts: Vec<u64>,
    pub total: u64,
    pub checksum: u64,
}

impl Histogram {
    pub fn new(vocab: usize) -> Histogram {
        Histogram {
            counts: vec![0; vocab],
            total: 0,
            checksum: 0xcbf2_9ce4_8422_2325,
        }
    }
}

impl TokenSink for Histogram {
    fn token(&mut self, id: u32) {
        if let Some(c) = self.counts.get_mut(id as usize) {
            *c += 1;
        }
        self.total += 1;
        self.checksum = (self.checksum ^ id as u64).wrapping_mul(0x0100_0000_01b3);
    }
}

pub struct Tokenizer {
    /// token bytes -> id
    vocab: HashMap<Box<[u8]>, u32, FnvBuild>,
    /// The same entries for pieces of at most 7 bytes, keyed by the packed bytes: most words
    /// are short, and an integer key avoids a `memcmp` per lookup.
    short: HashMap<u64, u32, FnvBuild>,
    /// id -> token bytes
    pub pieces: Vec<Box<[u8]>>,
    /// (left, right) -> (rank, merged id)
    merges: HashMap<(u32, u32), (u32, u32), FnvBuild>,
}

#[derive(Default, Clone, Copy)]
pub struct Stats {
    pub pieces: u64,
    pub vocab_hits: u64,
    pub bpe_words: u64,
    pub merges_applied: u64,
}

impl Tokenizer {
    pub fn new() -> Tokenizer {
        let mut t = Tokenizer {
            vocab: HashMap::default(),
            short: HashMap::default(),
            pieces: Vec::new(),
            merges: HashMap::default(),
        };
        for b in 0..=255u8 {
            t.add_piece(vec![b]);
        }
        // Merges: build each word (and its space-prefixed and capitalized forms) left to
        // right, so every prefix becomes a token. Common subwords get low ranks first.
        let mut forms: Vec<Vec<u8>> = Vec::new();
        for w in crate::text::WORDS {
            let w = w.as_bytes();
            let mut cap = w.to_vec();
            cap[0] = cap[0].to_ascii_uppercase();
            forms.push(w.to_vec());
            forms.push([b" ", w].concat());
            forms.push(cap.clone());
            forms.push([b" ", &cap[..]].concat());
        }
        for s in [
            "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "  ", "    ", "\n\n", "...", ".\n", ").",
            "\",",
        ] {
            forms.push(s.as_bytes().to_vec());
        }
        // Common English bigrams first (lowest rank), then whole-word prefixes.
        for bg in [
            "th", "he", "in", "er", "an", "re", "on", "at", "en", "nd", "ti", "es", "or", "te",
            "of", "ed", "is", "it", "al", "ar", "st", "to", "nt", "ng", " t", " a", " s", " w",
            " o", " i",
        ] {
            let b = bg.as_bytes();
            t.add_merge(b[0] as u32, b[1] as u32);
        }
        for f in &forms {
            let mut cur = f[0] as u32;
            for &b in &f[1..] {
                let next = t.pieces[cur as usize]
                    .iter()
                    .copied()
                    .chain([b])
                    .collect::<Vec<u8>>();
                cur = match t.vocab.get(&next[..]) {
                    Some(&id) => id,
                    None => t.add_merge(cur, b as u32),
                };
            }
        }
        t
    }

    fn add_piece(&mut self, bytes: Vec<u8>) -> u32 {
        let id = self.pieces.len() as u32;
        let bytes: Box<[u8]> = bytes.into_boxed_slice();
        if let Some(k) = pack(&bytes) {
            self.short.insert(k, id);
        }
        self.vocab.insert(bytes.clone(), id);
        self.pieces.push(bytes);
        id
    }

    fn add_merge(&mut self, a: u32, b: u32) -> u32 {
        if let Some(&(_, id)) = self.merges.get(&(a, b)) {
            return id;
        }
        let mut bytes = self.pieces[a as usize].to_vec();
        bytes.extend_from_slice(&self.pieces[b as usize]);
        if let Some(&id) = self.vocab.get(&bytes[..]) {
            return id;
        }
        let rank = self.merges.len() as u32;
        let id = self.add_piece(bytes);
        self.merges.insert((a, b), (rank, id));
        id
    }

    pub fn vocab_size(&self) -> usize {
        self.pieces.len()
    }

    /// Normalizes and encodes `text`, handing every token id to `sink`.
    pub fn encode(
        &self,
        pipeline: &Pipeline,
        text: &[u8],
        stats: &mut Stats,
        sink: &mut dyn TokenSink,
    ) {
        let text = &pipeline.normalize(text)[..];
        let mut i = 0;
        let n = text.len();
        let mut scratch: Vec<u32> = Vec::with_capacity(64);
        while i < n {
            let end = pipeline.pre.next_piece(text, i).max(i + 1).min(n);
            let piece = &text[i..end];
            stats.pieces += 1;
            let hit = match pack(piece) {
                Some(k) => self.short.get(&k),
                None => self.vocab.get(piece),
            };
            if let Some(&id) = hit {
                stats.vocab_hits += 1;
                sink.token(id);
            } else {
                stats.bpe_words += 1;
                self.bpe(piece, &mut scratch, stats);
                for &id in &scratch {
                    sink.token(id);
                }
            }
            i = end;
        }
    }

    /// Classic BPE: repeatedly merge the adjacent pair with the lowest rank.
    fn bpe(&self, piece: &[u8], ids: &mut Vec<u32>, stats: &mut Stats) {
        ids.clear();
        ids.extend(piece.iter().map(|&b| b as u32));
        loop {
            let mut best: Option<(u32, usize, u32)> = None;
            for k in 0..ids.len().saturating_sub(1) {
                if let Some(&(rank, id)) = self.merges.get(&(ids[k], ids[k + 1])) {
                    match best {
                        Some((r, _, _)) if r <= rank => {}
                        _ => best = Some((rank, k, id)),
                    }
                }
            }
            match best {
                None => break,
                Some((_, k, id)) => {
                    ids[k] = id;
                    ids.remove(k + 1);
                    stats.merges_applied += 1;
                }
            }
        }
    }
}

/// Packs up to 7 bytes and the length into one integer key.
#[inline]
fn pack(p: &[u8]) -> Option<u64> {
    if p.len() > 7 {
        return None;
    }
    let mut k = (p.len() as u64) << 56;
    for (i, &b) in p.iter().enumerate() {
        k |= (b as u64) << (8 * i);
    }
    Some(k)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Letter,
    Digit,
    Space,
    Newline,
    Apostrophe,
    Punct,
}

#[inline]
fn class(b: u8) -> Class {
    match b {
        b'a'..=b'z' | b'A'..=b'Z' => Class::Letter,
        b'0'..=b'9' => Class::Digit,
        b' ' | b'\t' | b'\r' | 0x0b | 0x0c => Class::Space,
        b'\n' => Class::Newline,
        b'\'' => Class::Apostrophe,
        0x80..=0xff => Class::Letter, // UTF-8 bytes are treated as letters
        _ => Class::Punct,
    }
}

fn is_space(c: Class) -> bool {
    matches!(c, Class::Space | Class::Newline)
}

/// Returns the end of the pre-token starting at `i` (GPT-2 pattern, hand-compiled).
fn next_piece(t: &[u8], i: usize) -> usize {
    let n = t.len();
    let c = class(t[i]);
    // Contractions: 's 't 're 've 'm 'll 'd
    if c == Class::Apostrophe && i + 1 < n {
        let a = t[i + 1];
        match a {
            b's' | b't' | b'm' | b'd' => return i + 2,
            b'r' | b'v' if i + 2 < n && t[i + 2] == b'e' => return i + 3,
            b'l' if i + 2 < n && t[i + 2] == b'l' => return i + 3,
            _ => {}
        }
    }
    // Optional single leading space before a non-space run.
    let (start, c) = if t[i] == b' ' && i + 1 < n && !is_space(class(t[i + 1])) {
        (i + 1, class(t[i + 1]))
    } else {
        (i, c)
    };
    let mut j = start + 1;
    match c {
        Class::Letter => {
            while j < n && class(t[j]) == Class::Letter {
                j += 1;
            }
        }
        Class::Digit => {
            // At most three digits per token (like modern tokenizers).
            while j < n && j < start + 3 && class(t[j]) == Class::Digit {
                j += 1;
            }
        }
        Class::Punct | Class::Apostrophe => {
            while j < n && matches!(class(t[j]), Class::Punct | Class::Apostrophe) {
                j += 1;
            }
        }
        Class::Space | Class::Newline => {
            // \s+(?!\S) | \s+ : leave the last space to prefix the following word.
            while j < n && is_space(class(t[j])) {
                j += 1;
            }
            if j < n && j - start > 1 && t[j - 1] == b' ' {
                j -= 1;
            }
        }
    }
    j
}
