//! Deterministic pseudo-English text generator: Zipf-distributed common words plus a
//! sprinkling of rare things (invented words, numbers, contractions, URLs, UTF-8, code-ish
//! snippets) so that a tokenizer sees both very hot and very cold paths.

use crate::rng::Rng;

pub const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "had",
    "they",
    "you",
    "were",
    "their",
    "one",
    "all",
    "we",
    "can",
    "her",
    "has",
    "there",
    "been",
    "if",
    "more",
    "when",
    "will",
    "would",
    "who",
    "so",
    "no",
    "she",
    "other",
    "its",
    "may",
    "these",
    "what",
    "them",
    "than",
    "some",
    "him",
    "time",
    "into",
    "only",
    "do",
    "could",
    "new",
    "about",
    "two",
    "first",
    "then",
    "also",
    "any",
    "like",
    "my",
    "now",
    "over",
    "such",
    "our",
    "man",
    "me",
    "even",
    "most",
    "made",
    "after",
    "many",
    "must",
    "before",
    "years",
    "through",
    "back",
    "where",
    "much",
    "your",
    "way",
    "well",
    "down",
    "should",
    "because",
    "each",
    "just",
    "those",
    "people",
    "how",
    "too",
    "little",
    "state",
    "good",
    "very",
    "make",
    "world",
    "still",
    "own",
    "see",
    "men",
    "work",
    "long",
    "get",
    "here",
    "between",
    "both",
    "life",
    "being",
    "under",
    "never",
    "day",
    "same",
    "another",
    "know",
    "while",
    "last",
    "might",
    "us",
    "great",
    "old",
    "year",
    "off",
    "come",
    "since",
    "against",
    "go",
    "came",
    "right",
    "used",
    "take",
    "three",
    "model",
    "token",
    "layer",
    "weight",
    "tensor",
    "matrix",
    "vector",
    "kernel",
    "cache",
    "memory",
    "branch",
    "profile",
    "compiler",
    "binary",
    "optimize",
    "inline",
    "function",
    "loop",
    "value",
    "byte",
    "string",
    "parse",
    "input",
    "output",
    "train",
    "infer",
    "batch",
    "score",
    "graph",
    "node",
    "edge",
    "thread",
    "signal",
    "buffer",
    "stream",
    "packet",
    "server",
    "client",
    "request",
    "error",
    "result",
    "option",
    "future",
    "stack",
    "heap",
    "pointer",
    "index",
    "array",
    "slice",
    "iterator",
    "closure",
    "trait",
    "struct",
    "enum",
    "match",
    "pattern",
    "lifetime",
    "borrow",
    "ownership",
    "runtime",
    "benchmark",
    "latency",
    "throughput",
    "instruction",
    "register",
    "pipeline",
    "predictor",
    "speculative",
    "vectorize",
    "embedding",
    "attention",
    "softmax",
    "activation",
    "gradient",
    "quantize",
    "sampling",
    "temperature",
    "vocabulary",
    "merge",
];

const RARE_UTF8: &[&str] = &[
    "café",
    "naïve",
    "façade",
    "über",
    "smörgåsbord",
    "jalapeño",
    "Ærøskøbing",
    "日本語",
    "東京",
    "Москва",
    "Ελλάδα",
    "שלום",
    "مرحبا",
    "🙂",
    "🚀",
    "∑",
    "→",
    "€",
];

const CONTRACTIONS: &[&str] = &["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"];

fn push_word(out: &mut String, rng: &mut Rng, capitalize: bool) {
    let r = rng.below(1000);
    if r < 930 {
        let w = WORDS[rng.skewed(WORDS.len() as u64) as usize];
        if capitalize {
            let mut cs = w.chars();
            if let Some(c) = cs.next() {
                out.extend(c.to_uppercase());
                out.push_str(cs.as_str());
            }
        } else if rng.chance(1, 200) {
            out.push_str(&w.to_uppercase());
        } else {
            out.push_str(w);
        }
        if rng.chance(1, 40) {
            out.push_str(CONTRACTIONS[rng.below(CONTRACTIONS.len() as u64) as usize]);
        }
    } else if r < 960 {
        // An invented word: forces the slow BPE merge path in the tokenizer.
        let len = 3 + rng.below(10);
        for i in 0..len {
            let c = if i % 2 == 1 && rng.chance(2, 3) {
                b"aeiou"[rng.below(5) as usize]
            } else {
                b'a' + rng.below(26) as u8
            };
            out.push(if i == 0 && capitalize {
                c.to_ascii_uppercase()
            } else {
                c
            } as char);
        }
    } else if r < 985 {
        // A number: integer, decimal, or a year-ish value.
        match rng.below(3) {
            0 => out.push_str(&rng.below(100).to_string()),
            1 => {
                out.push_str(&rng.below(10_000).to_string());
                out.push('.');
                out.push_str(&rng.below(100).to_string());
            }
            _ => out.push_str(&(1900 + rng.below(130)).to_string()),
        }
    } else if r < 993 {
        out.push_str(RARE_UTF8[rng.below(RARE_UTF8.len() as u64) as usize]);
    } else if r < 997 {
        out.push_str("https://example.com/");
        out.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        out.push_str("?id=");
        out.push_str(&rng.below(1_000_000).to_string());
    } else {
        out.push_str("fn(");
        out.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        out.push_str(")->{x+=0x");
        out.push_str(&format!("{:x}", rng.next_u64() >> 40));
        out.push_str(";}");
    }
}

/// Generates roughly `size` bytes of text from `seed`.
pub fn generate(seed: u64, size: usize) -> String {
    let mut rng = Rng::new(seed);
    let mut out = String::with_capacity(size + 256);
    while out.len() < size {
        // One paragraph.
        let sentences = 1 + rng.below(6);
        for s in 0..sentences {
            if s > 0 {
                out.push(' ');
            }
            let quoted = rng.chance(1, 25);
            if quoted {
                out.push('"');
            }
            let words = 4 + rng.skewed(20);
            for w in 0..words {
                if w > 0 {
                    if rng.chance(1, 12) {
                        out.push_str(if rng.chance(1, 4) { ";" } else { "," });
                    }
                    out.push(' ');
                    if rng.chance(1, 60) {
                        out.push('(');
                        push_word(&mut out, &mut rng, false);
                        out.push(')');
                        continue;
                    }
                }
                push_word(&mut out, &mut rng, w == 0);
            }
            out.push(match rng.below(20) {
                0 => '?',
                1 => '!',
                _ => '.',
            });
            if quoted {
                out.push('"');
            }
        }
        out.push('\n');
        if rng.chance(1, 3) {
            out.push('\n');
        }
        if rng.chance(1, 50) {
            out.push_str("    ");
        }
    }
    out
}
