//! A toy quantized "language model": embedding lookup, then a configurable stack of layers
//! (`Box<dyn Layer>`: dense int8 layers with a per-layer activation function, a residual mix
//! with the recurrent state, a classifier head), then a top-k sampler. Integer math only, so
//! the output is bit-identical under any optimization.

use crate::rng::Rng;

pub const DIM: usize = 32;
pub const HIDDEN: usize = 64;
pub const CLASSES: usize = 16;

/// An activation function, chosen by name at run time.
pub type Activation = fn(i32) -> i32;

fn relu(x: i32) -> i32 {
    x.clamp(0, 127)
}
fn leaky(x: i32) -> i32 {
    if x >= 0 {
        x.min(127)
    } else {
        (x >> 3).max(-127)
    }
}
fn hardtanh(x: i32) -> i32 {
    x.clamp(-127, 127)
}
fn hardswish(x: i32) -> i32 {
    // x * relu6(x + 3) / 6 on a fixed-point grid where 32 == 1.0
    let g = (x + 96).clamp(0, 192);
    (x * g / 192).clamp(-127, 127)
}

pub fn activation(name: &str) -> Result<Activation, String> {
    Ok(match name {
        "relu" => relu,
        "leaky" => leaky,
        "hardtanh" => hardtanh,
        "hardswish" => hardswish,
        other => return Err(format!("unknown activation {other:?}")),
    })
}

#[derive(Default)]
pub struct Stats {
    pub active: u64,
    pub skipped: u64,
}

pub trait Layer {
    fn describe(&self) -> String;
    /// Reads `x`, writes the layer output into `out` (cleared first).
    fn forward(&self, x: &[i32], out: &mut Vec<i32>, stats: &mut Stats);
}

/// `out = act((W x + b) >> shift)`, computed column-wise so that zero inputs are skipped
/// (ReLU outputs are sparse).
pub struct Dense {
    rows: usize,
    cols: usize,
    wt: Vec<i8>, // cols x rows: column j is contiguous
    b: Vec<i32>,
    shift: u32,
    act: Activation,
    act_name: String,
}

impl Dense {
    fn new(
        rng: &mut Rng,
        cols: usize,
        rows: usize,
        shift: u32,
        act_name: &str,
    ) -> Result<Dense, String> {
        Ok(Dense {
            rows,
            cols,
            wt: weights(rng, rows * cols, 40),
            b: (0..rows).map(|_| rng.below(4001) as i32 - 2000).collect(),
            shift,
            act: activation(act_name)?,
            act_name: act_name.to_string(),
        })
    }
}

impl Layer for Dense {
    fn describe(&self) -> String {
        format!("dense {}->{} {}", self.cols, self.rows, self.act_name)
    }
    fn forward(&self, x: &[i32], out: &mut Vec<i32>, stats: &mut Stats) {
        out.clear();
        out.extend_from_slice(&self.b);
        for (j, &xj) in x.iter().enumerate().take(self.cols) {
            if xj == 0 {
                stats.skipped += 1;
                continue;
            }
            let col = &self.wt[j * self.rows..][..self.rows];
            for (o, &w) in out.iter_mut().zip(col) {
                *o += w as i32 * xj;
            }
        }
        for o in out.iter_mut() {
            *o = (self.act)(*o >> self.shift);
            stats.active += (*o != 0) as u64;
        }
    }
}

/// Adds a decayed copy of the input to itself (cheap residual smoothing).
pub struct Residual {
    keep_num: i32,
}

impl Layer for Residual {
    fn describe(&self) -> String {
        format!("residual {}/4", self.keep_num)
    }
    fn forward(&self, x: &[i32], out: &mut Vec<i32>, _stats: &mut Stats) {
        out.clear();
        out.extend(
            x.iter()
                .map(|&v| (v + ((v * self.keep_num) >> 2)).clamp(-127, 127)),
        );
    }
}

pub struct Model {
    vocab: usize,
    emb: Vec<i8>, // vocab x DIM
    layers: Vec<Box<dyn Layer>>,
    head: Dense,
}

pub struct Outcome {
    pub tokens: u64,
    pub stats: Stats,
    pub saturated: u64,
    pub class_hist: [u64; CLASSES],
    pub sampled_checksum: u64,
    pub state_checksum: u64,
}

fn weights(rng: &mut Rng, n: usize, scale: u64) -> Vec<i8> {
    (0..n)
        .map(|_| (rng.below(2 * scale + 1) as i64 - scale as i64) as i8)
        .collect()
}

impl Model {
    /// `acts` names the activations of the two hidden layers, e.g. `"relu,leaky"`.
    pub fn new(vocab: usize, seed: u64, acts: &str) -> Result<Model, String> {
        let mut rng = Rng::new(seed);
        let (a1, a2) = acts.split_once(',').unwrap_or((acts, acts));
        Ok(Model {
            vocab,
            emb: weights(&mut rng, vocab * DIM, 100),
            layers: vec![
                Box::new(Dense::new(&mut rng, DIM, HIDDEN, 6, a1)?),
                Box::new(Dense::new(&mut rng, HIDDEN, DIM, 7, a2)?),
                Box::new(Residual { keep_num: 1 }),
            ],
            head: Dense::new(&mut rng, DIM, CLASSES, 0, "hardtanh")?,
        })
    }

    pub fn describe(&self) -> String {
        let l: Vec<String> = self.layers.iter().map(|l| l.describe()).collect();
        format!(
            "emb {}x{DIM} | {} | head {}",
            self.vocab,
            l.join(" | "),
            self.head.describe()
        )
    }

    pub fn run(&self, tokens: &[u32], seed: u64) -> Outcome {
        let mut rng = Rng::new(seed);
        let mut h = vec![0i32; DIM];
        let mut out = Outcome {
            tokens: 0,
            stats: Stats::default(),
            saturated: 0,
            class_hist: [0; CLASSES],
            sampled_checksum: 0,
            state_checksum: 0,
        };
        let mut x: Vec<i32> = Vec::with_capacity(HIDDEN);
        let mut y: Vec<i32> = Vec::with_capacity(HIDDEN);
        let mut logits: Vec<i32> = Vec::with_capacity(CLASSES);
        for (pos, &t) in tokens.iter().enumerate() {
            out.tokens += 1;
            // Embedding + decayed recurrent state, re-quantized to the int8 range.
            let e = &self.emb[(t as usize % self.vocab) * DIM..][..DIM];
            x.clear();
            for i in 0..DIM {
                let v = e[i] as i32 + ((h[i] * 3) >> 2);
                x.push(quantize(v, &mut out.saturated));
            }
            for layer in &self.layers {
                layer.forward(&x, &mut y, &mut out.stats);
                std::mem::swap(&mut x, &mut y);
            }
            h.copy_from_slice(&x[..DIM]);
            self.head.forward(&h, &mut logits, &mut out.stats);
            let best = argmax(&logits);
            out.class_hist[best] += 1;
            // Occasionally "sample" with top-k and a deterministic temperature.
            if pos % 16 == 15 {
                let s = sample_top_k(&logits, 4, &mut rng);
                out.sampled_checksum = out
                    .sampled_checksum
                    .wrapping_mul(31)
                    .wrapping_add(s as u64 + 1);
            }
        }
        for (k, v) in h.iter().enumerate() {
            out.state_checksum =
                out.state_checksum.wrapping_mul(1_000_003) ^ ((*v as i64 as u64) << (k % 8));
        }
        out
    }
}

#[inline]
fn quantize(v: i32, saturated: &mut u64) -> i32 {
    if v > 127 {
        *saturated += 1;
        127
    } else if v < -127 {
        *saturated += 1;
        -127
    } else {
        v
    }
}

fn argmax(v: &[i32]) -> usize {
    let mut best = 0;
    for i in 1..v.len() {
        if v[i] > v[best] {
            best = i;
        }
    }
    best
}

/// Picks among the k largest logits with integer "softmax" weights (2^(l/scale)).
fn sample_top_k(logits: &[i32], k: usize, rng: &mut Rng) -> usize {
    let n = logits.len();
    let mut idx: Vec<usize> = (0..n).collect();
    // Partial selection sort: the k largest in front (ties by index for determinism).
    for a in 0..k.min(n) {
        let mut m = a;
        for b in a + 1..n {
            let (lb, lm) = (logits[idx[b]], logits[idx[m]]);
            if lb > lm || (lb == lm && idx[b] < idx[m]) {
                m = b;
            }
        }
        idx.swap(a, m);
    }
    let top = logits[idx[0]];
    let mut w = [0u64; CLASSES];
    let mut total = 0u64;
    for a in 0..k.min(n) {
        let d = ((top - logits[idx[a]]) / 16).min(20) as u32;
        w[a] = 1u64 << (20 - d);
        total += w[a];
    }
    let mut r = rng.below(total);
    for a in 0..k.min(n) {
        if r < w[a] {
            return idx[a];
        }
        r -= w[a];
    }
    idx[0]
}
