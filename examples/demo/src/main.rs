//! `demo`: the bundled workload for cargo-optimize.
//!
//! ```text
//! demo tokenize <file> [--repeat N]         tokenize a text file (N passes)
//! demo tokenize --seed S --size BYTES       tokenize generated text
//! demo infer <file> [--repeat N]            tokenize + run the toy int8 model
//! demo infer --seed S --size BYTES
//! demo interp <n> [--seed S]                run the bytecode benchmark suite at scale n
//! demo gen <seed> <bytes> <out>             write generated text to a file
//! ```
//!
//! Output is deterministic text (counts and integer checksums only).

#[cfg(feature = "text")]
mod infer;
mod interp;
#[cfg(feature = "text")]
mod rng;
#[cfg(feature = "text")]
mod text;
#[cfg(feature = "text")]
mod tokenize;

use std::process::ExitCode;

const USAGE: &str = "usage:
  demo tokenize (<file> [--repeat N] | --seed S --size BYTES) [--pipeline SPEC]
  demo infer (<file> [--repeat N] | --seed S --size BYTES) [--pipeline SPEC] [--act A1,A2]
    SPEC: comma-separated normalizers (strip-control, unify-spaces, lowercase), '/',
          pre-tokenizer (gpt2, whitespace); default strip-control,unify-spaces/gpt2
    A1,A2: activations of the two hidden layers (relu, leaky, hardtanh, hardswish);
          default relu,leaky
  demo interp <n> [--seed S]
  demo gen <seed> <bytes> <out>";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("demo: {e}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn num(s: Option<&String>, what: &str) -> Result<u64, String> {
    let s = s.ok_or_else(|| format!("missing {what}"))?;
    s.replace('_', "")
        .parse()
        .map_err(|_| format!("bad {what}: {s:?}"))
}

#[cfg(feature = "text")]
struct TextOpts {
    desc: String,
    data: Vec<u8>,
    /// Number of passes over `data`.
    repeat: u64,
    pipeline: tokenize::Pipeline,
    acts: String,
}

#[cfg(feature = "text")]
const DEFAULT_PIPELINE: &str = "strip-control,unify-spaces/gpt2";
#[cfg(feature = "text")]
const DEFAULT_ACTS: &str = "relu,leaky";

/// Options of `tokenize`/`infer`: the text (a file, optionally repeated, or generated text),
/// the tokenizer pipeline and the model's activations.
#[cfg(feature = "text")]
fn text_opts(args: &[String]) -> Result<TextOpts, String> {
    let mut file = None;
    let (mut seed, mut size, mut repeat) = (None, None, 1u64);
    let mut pipeline = DEFAULT_PIPELINE.to_string();
    let mut acts = DEFAULT_ACTS.to_string();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seed" => seed = Some(num(it.next(), "--seed")?),
            "--size" => size = Some(num(it.next(), "--size")?),
            "--repeat" => repeat = num(it.next(), "--repeat")?.max(1),
            "--pipeline" => pipeline = it.next().ok_or("missing --pipeline value")?.clone(),
            "--act" => acts = it.next().ok_or("missing --act value")?.clone(),
            s if s.starts_with("--") => return Err(format!("unknown option {s}")),
            s => file = Some(s.to_string()),
        }
    }
    let pipeline = tokenize::Pipeline::parse(&pipeline)?;
    let (desc, data) = match (file, seed, size) {
        (Some(f), None, None) => {
            let data = std::fs::read(&f).map_err(|e| format!("cannot read {f}: {e}"))?;
            let name = std::path::Path::new(&f)
                .file_name()
                .map_or(f.clone(), |n| n.to_string_lossy().into_owned());
            (format!("file {name} x{repeat}"), data)
        }
        (None, Some(s), Some(n)) if repeat == 1 => (
            format!("generated seed={s} size={n}"),
            text::generate(s, n as usize).into_bytes(),
        ),
        _ => return Err("need <file> [--repeat N] or --seed S --size BYTES".into()),
    };
    Ok(TextOpts {
        desc,
        data,
        repeat,
        pipeline,
        acts,
    })
}

fn fnv64(h: u64, v: u64) -> u64 {
    (h ^ v).wrapping_mul(0x0100_0000_01b3)
}

#[cfg(feature = "text")]
fn show_piece(p: &[u8]) -> String {
    let mut s = String::new();
    for c in String::from_utf8_lossy(p).chars() {
        match c {
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            ' ' => s.push('·'),
            c if c.is_control() => s.push_str(&format!("\\x{:02x}", c as u32)),
            c => s.push(c),
        }
    }
    s
}

#[cfg(feature = "text")]
fn cmd_tokenize(args: &[String]) -> Result<(), String> {
    let TextOpts {
        desc,
        data,
        repeat,
        pipeline,
        ..
    } = text_opts(args)?;
    let tok = tokenize::Tokenizer::new();
    let mut stats = tokenize::Stats::default();
    let mut hist = tokenize::Histogram::new(tok.vocab_size());
    for _ in 0..repeat {
        tok.encode(&pipeline, &data, &mut stats, &mut hist);
    }
    let tokenize::Histogram {
        counts,
        total,
        checksum,
    } = hist;
    let unique = counts.iter().filter(|&&c| c > 0).count();
    println!("input: {desc} ({} bytes)", data.len() as u64 * repeat);
    println!("pipeline: {}", pipeline.describe());
    println!("vocab: {} tokens", tok.vocab_size());
    println!(
        "pieces: {} (vocab hits {}, bpe {}; {} merges applied)",
        stats.pieces, stats.vocab_hits, stats.bpe_words, stats.merges_applied
    );
    println!("tokens: {total} ({unique} distinct)");
    println!("checksum: {checksum:016x}");
    let mut top: Vec<(u64, usize)> = counts.iter().enumerate().map(|(i, &c)| (c, i)).collect();
    top.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for (c, id) in top.iter().take(8) {
        println!("  {:>6} x {:?}", c, show_piece(&tok.pieces[*id]));
    }
    Ok(())
}

#[cfg(feature = "text")]
fn cmd_infer(args: &[String]) -> Result<(), String> {
    let TextOpts {
        desc,
        data,
        repeat,
        pipeline,
        acts,
    } = text_opts(args)?;
    let tok = tokenize::Tokenizer::new();
    let mut stats = tokenize::Stats::default();
    let mut ids = Vec::with_capacity(data.len() / 3 * repeat as usize);
    for _ in 0..repeat {
        tok.encode(&pipeline, &data, &mut stats, &mut ids);
    }
    let model = infer::Model::new(tok.vocab_size(), 0x5EED, &acts)?;
    let out = model.run(&ids, 7);
    println!("input: {desc} ({} bytes)", data.len() as u64 * repeat);
    println!("model: {}", model.describe());
    println!("tokens: {}", out.tokens);
    let per = |v: u64| {
        format!(
            "{}.{:02}",
            v / out.tokens.max(1),
            v * 100 / out.tokens.max(1) % 100
        )
    };
    println!(
        "active units: {} ({} per token), skipped inputs: {} ({} per token), saturated: {}",
        out.stats.active,
        per(out.stats.active),
        out.stats.skipped,
        per(out.stats.skipped),
        out.saturated
    );
    let hist: Vec<String> = out.class_hist.iter().map(|c| c.to_string()).collect();
    println!("classes: {}", hist.join(" "));
    println!("sampled: {:016x}", out.sampled_checksum);
    println!("state: {:016x}", out.state_checksum);
    Ok(())
}

fn cmd_interp(args: &[String]) -> Result<(), String> {
    let n = num(args.first(), "<n>")?;
    let mut seed = 1u64;
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seed" => seed = num(it.next(), "--seed")?,
            s => return Err(format!("unknown argument {s}")),
        }
    }
    let mut total_steps = 0u64;
    let mut checksum = 0xcbf2_9ce4_8422_2325u64;
    for (name, code, mem) in interp::suite(n, seed) {
        let mut vm = interp::Vm::new(&code, mem);
        let res = vm.run();
        let emitted: Vec<String> = vm.emitted.iter().map(|v| v.to_string()).collect();
        match res {
            Ok(()) => println!(
                "{name:>8}: {:>11} steps  trace {:016x}  -> {}",
                vm.steps,
                vm.trace,
                emitted.join(" ")
            ),
            Err(e) => println!("{name:>8}: error {e} after {} steps", vm.steps),
        }
        total_steps += vm.steps;
        for v in &vm.emitted {
            for b in v.to_string().bytes() {
                checksum = fnv64(checksum, b as u64);
            }
        }
    }
    println!("total: {total_steps} steps, checksum {checksum:016x}");
    Ok(())
}

#[cfg(feature = "text")]
fn cmd_gen(args: &[String]) -> Result<(), String> {
    let seed = num(args.first(), "<seed>")?;
    let size = num(args.get(1), "<bytes>")?;
    let out = args.get(2).ok_or("missing <out>")?;
    let text = text::generate(seed, size as usize);
    std::fs::write(out, &text).map_err(|e| format!("cannot write {out}: {e}"))?;
    println!("wrote {} bytes to {out}", text.len());
    Ok(())
}

fn run(args: &[String]) -> Result<(), String> {
    let (cmd, rest) = args.split_first().ok_or("missing command")?;
    match cmd.as_str() {
        #[cfg(feature = "text")]
        "tokenize" => cmd_tokenize(rest),
        #[cfg(feature = "text")]
        "infer" => cmd_infer(rest),
        #[cfg(feature = "text")]
        "gen" => cmd_gen(rest),
        #[cfg(not(feature = "text"))]
        "tokenize" | "infer" | "gen" => Err(format!(
            "`{cmd}` needs the `text` feature (this build has the interpreter only)"
        )),
        "interp" => cmd_interp(rest),
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown command {other:?}")),
    }
}
