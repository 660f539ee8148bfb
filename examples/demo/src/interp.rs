//! A tiny stack-based bytecode VM with ~45 opcodes and a `match` dispatch loop, plus a few
//! benchmark programs written in its assembly. Opcode frequencies are very skewed (a handful of
//! opcodes do most of the work, many are rare), which is what profile-guided block layout,
//! inlining and switch lowering love.

use std::collections::HashMap;
use std::fmt;

/// The instruction set (not every program uses every opcode).
#[allow(dead_code)]
#[derive(Clone, Copy, Debug)]
pub enum Op {
    Nop,
    Halt,
    Push(i64),
    PushNil,
    Pop,
    Dup,
    Swap,
    Over,
    Rot,
    Load(u16),
    Store(u16),
    Inc(u16),
    Dec(u16),
    AddI(i32),
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Neg,
    Abs,
    Min,
    Max,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Not,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Jmp(u32),
    Jz(u32),
    Jnz(u32),
    /// Call(target, number of arguments moved from the stack into the new frame's locals)
    Call(u32, u8),
    Ret,
    ALoad,
    AStore,
    ALen,
    Emit,
    Assert,
    Trace,
}

/// A dynamically typed value: integers silently widen to 128 bits on overflow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Nil,
    Bool(bool),
    Int(i64),
    Big(i128),
}

use Value::{Big, Bool, Int, Nil};

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Nil => write!(f, "nil"),
            Bool(b) => write!(f, "{b}"),
            Int(i) => write!(f, "{i}"),
            Big(i) => write!(f, "{i}n"),
        }
    }
}

impl Value {
    fn type_name(&self) -> &'static str {
        match self {
            Nil => "nil",
            Bool(_) => "bool",
            Int(_) => "int",
            Big(_) => "big",
        }
    }

    fn truthy(&self) -> bool {
        match *self {
            Nil | Bool(false) | Int(0) => false,
            Big(b) => b != 0,
            _ => true,
        }
    }

    fn wide(&self) -> Option<i128> {
        match *self {
            Int(i) => Some(i as i128),
            Big(b) => Some(b),
            Bool(b) => Some(b as i128),
            Nil => None,
        }
    }

    /// Narrows a 128-bit result back to `Int` when it fits.
    fn norm(v: i128) -> Value {
        if v >= i64::MIN as i128 && v <= i64::MAX as i128 {
            Int(v as i64)
        } else {
            Big(v)
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Min,
    Max,
}

#[derive(Debug)]
pub enum VmError {
    StackUnderflow { pc: usize, op: Op, depth: usize },
    StackOverflow { pc: usize },
    Overflow { pc: usize, what: String },
    DivByZero { pc: usize, lhs: Value },
    Type { pc: usize, msg: String },
    OutOfBounds { pc: usize, index: Value, len: usize },
    BadLocal { pc: usize, slot: u16 },
    AssertFailed { pc: usize },
    BadJump { pc: usize, target: usize },
}

impl fmt::Display for VmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VmError::StackUnderflow { pc, op, depth } => {
                write!(f, "stack underflow at {pc} ({op:?} with depth {depth})")
            }
            VmError::StackOverflow { pc } => write!(f, "stack overflow at {pc}"),
            VmError::Overflow { pc, what } => write!(f, "arithmetic overflow at {pc}: {what}"),
            VmError::DivByZero { pc, lhs } => write!(f, "division of {lhs} by zero at {pc}"),
            VmError::Type { pc, msg } => write!(f, "type error at {pc}: {msg}"),
            VmError::OutOfBounds { pc, index, len } => {
                write!(f, "index {index} out of bounds (len {len}) at {pc}")
            }
            VmError::BadLocal { pc, slot } => write!(f, "bad local slot {slot} at {pc}"),
            VmError::AssertFailed { pc } => write!(f, "assertion failed at {pc}"),
            VmError::BadJump { pc, target } => write!(f, "jump to {target} out of range at {pc}"),
        }
    }
}

fn type_error(pc: usize, op: Arith, a: Value, b: Value) -> VmError {
    VmError::Type {
        pc,
        msg: format!(
            "cannot apply {op:?} to {} and {}",
            a.type_name(),
            b.type_name()
        ),
    }
}

/// Binary arithmetic with dynamic typing: the int/int fast path first, then widening.
fn arith(pc: usize, op: Arith, a: Value, b: Value) -> Result<Value, VmError> {
    if let (Int(x), Int(y)) = (a, b) {
        let r = match op {
            Arith::Add => x.checked_add(y),
            Arith::Sub => x.checked_sub(y),
            Arith::Mul => x.checked_mul(y),
            Arith::Div | Arith::Mod if y == 0 => return Err(VmError::DivByZero { pc, lhs: a }),
            Arith::Div => x.checked_div(y),
            Arith::Mod => x.checked_rem(y),
            Arith::And => Some(x & y),
            Arith::Or => Some(x | y),
            Arith::Xor => Some(x ^ y),
            Arith::Shl => Some(x.wrapping_shl(y as u32)),
            Arith::Shr => Some((x as u64).wrapping_shr(y as u32) as i64),
            Arith::Min => Some(x.min(y)),
            Arith::Max => Some(x.max(y)),
        };
        if let Some(r) = r {
            return Ok(Int(r));
        }
    }
    // Slow path: mixed or wide operands, or an int result that overflowed.
    let (Some(x), Some(y)) = (a.wide(), b.wide()) else {
        return Err(type_error(pc, op, a, b));
    };
    if (matches!(a, Bool(_)) || matches!(b, Bool(_)))
        && !matches!(op, Arith::And | Arith::Or | Arith::Xor)
    {
        return Err(type_error(pc, op, a, b));
    }
    let r = match op {
        Arith::Add => x.checked_add(y),
        Arith::Sub => x.checked_sub(y),
        Arith::Mul => x.checked_mul(y),
        Arith::Div | Arith::Mod if y == 0 => return Err(VmError::DivByZero { pc, lhs: a }),
        Arith::Div => x.checked_div(y),
        Arith::Mod => x.checked_rem(y),
        Arith::And => Some(x & y),
        Arith::Or => Some(x | y),
        Arith::Xor => Some(x ^ y),
        Arith::Shl => u32::try_from(y).ok().and_then(|s| x.checked_shl(s)),
        Arith::Shr => u32::try_from(y).ok().and_then(|s| x.checked_shr(s)),
        Arith::Min => Some(x.min(y)),
        Arith::Max => Some(x.max(y)),
    };
    match r {
        Some(r) => Ok(Value::norm(r)),
        None => Err(VmError::Overflow {
            pc,
            what: format!("{a} {op:?} {b}"),
        }),
    }
}

/// Ordering comparison; `Nil` and `Bool` only compare for (in)equality.
fn compare(pc: usize, op: Op, a: Value, b: Value) -> Result<bool, VmError> {
    if let (Int(x), Int(y)) = (a, b) {
        return Ok(match op {
            Op::Eq => x == y,
            Op::Ne => x != y,
            Op::Lt => x < y,
            Op::Le => x <= y,
            Op::Gt => x > y,
            _ => x >= y,
        });
    }
    match op {
        Op::Eq => return Ok(a.wide().is_some() && a.wide() == b.wide() || a == b),
        Op::Ne => return Ok(!(a.wide().is_some() && a.wide() == b.wide() || a == b)),
        _ => {}
    }
    match (a, b) {
        (Int(_) | Big(_), Int(_) | Big(_)) => {
            let (x, y) = (a.wide().unwrap_or(0), b.wide().unwrap_or(0));
            Ok(match op {
                Op::Lt => x < y,
                Op::Le => x <= y,
                Op::Gt => x > y,
                _ => x >= y,
            })
        }
        _ => Err(VmError::Type {
            pc,
            msg: format!(
                "cannot order {} and {} with {op:?}",
                a.type_name(),
                b.type_name()
            ),
        }),
    }
}

const MAX_STACK: usize = 1 << 16;
const MAX_FRAMES: usize = 1 << 12;
const LOCALS_PER_FRAME: usize = 8;

pub struct Vm<'a> {
    code: &'a [Op],
    stack: Vec<Value>,
    locals: Vec<Value>,
    frames: Vec<(usize, usize)>, // (return pc, locals base)
    pub mem: Vec<Value>,
    pub emitted: Vec<Value>,
    pub steps: u64,
    pub trace: u64,
}

impl<'a> Vm<'a> {
    pub fn new(code: &'a [Op], mem_size: usize) -> Vm<'a> {
        Vm {
            code,
            stack: Vec::with_capacity(256),
            locals: vec![Nil; LOCALS_PER_FRAME],
            frames: Vec::new(),
            mem: vec![Int(0); mem_size],
            emitted: Vec::new(),
            steps: 0,
            trace: 0,
        }
    }

    fn underflow(&self, pc: usize) -> VmError {
        VmError::StackUnderflow {
            pc,
            op: self.code[pc],
            depth: self.stack.len(),
        }
    }

    fn pop(&mut self, pc: usize) -> Result<Value, VmError> {
        match self.stack.pop() {
            Some(v) => Ok(v),
            None => Err(self.underflow(pc)),
        }
    }

    fn push(&mut self, pc: usize, v: Value) -> Result<(), VmError> {
        if self.stack.len() >= MAX_STACK {
            return Err(VmError::StackOverflow { pc });
        }
        self.stack.push(v);
        Ok(())
    }

    fn local(&mut self, pc: usize, slot: u16) -> Result<&mut Value, VmError> {
        let base = self.frames.last().map_or(0, |f| f.1);
        self.locals
            .get_mut(base + slot as usize)
            .ok_or(VmError::BadLocal { pc, slot })
    }

    fn binop(&mut self, pc: usize, op: Arith) -> Result<(), VmError> {
        let b = self.pop(pc)?;
        let a = self.pop(pc)?;
        let r = arith(pc, op, a, b)?;
        self.push(pc, r)
    }

    fn cmp(&mut self, pc: usize, op: Op) -> Result<(), VmError> {
        let b = self.pop(pc)?;
        let a = self.pop(pc)?;
        let r = compare(pc, op, a, b)?;
        self.push(pc, Bool(r))
    }

    fn index(&self, pc: usize, i: Value) -> Result<usize, VmError> {
        match i {
            Int(k) if (k as u64) < self.mem.len() as u64 => Ok(k as usize),
            _ => Err(VmError::OutOfBounds {
                pc,
                index: i,
                len: self.mem.len(),
            }),
        }
    }

    fn jump(&self, pc: usize, target: u32) -> Result<usize, VmError> {
        if (target as usize) < self.code.len() {
            Ok(target as usize)
        } else {
            Err(VmError::BadJump {
                pc,
                target: target as usize,
            })
        }
    }

    pub fn run(&mut self) -> Result<(), VmError> {
        let mut pc = 0usize;
        loop {
            let op = match self.code.get(pc) {
                Some(op) => *op,
                None => return Err(VmError::BadJump { pc, target: pc }),
            };
            self.steps += 1;
            let mut next = pc + 1;
            match op {
                Op::Nop => {}
                Op::Halt => return Ok(()),
                Op::Push(v) => self.push(pc, Int(v))?,
                Op::PushNil => self.push(pc, Nil)?,
                Op::Pop => {
                    self.pop(pc)?;
                }
                Op::Dup => {
                    let v = *self.stack.last().ok_or_else(|| self.underflow(pc))?;
                    self.push(pc, v)?;
                }
                Op::Swap => {
                    let n = self.stack.len();
                    if n < 2 {
                        return Err(self.underflow(pc));
                    }
                    self.stack.swap(n - 1, n - 2);
                }
                Op::Over => {
                    let n = self.stack.len();
                    if n < 2 {
                        return Err(self.underflow(pc));
                    }
                    let v = self.stack[n - 2];
                    self.push(pc, v)?;
                }
                Op::Rot => {
                    let n = self.stack.len();
                    if n < 3 {
                        return Err(self.underflow(pc));
                    }
                    self.stack[n - 3..].rotate_left(1);
                }
                Op::Load(i) => {
                    let v = *self.local(pc, i)?;
                    self.push(pc, v)?;
                }
                Op::Store(i) => {
                    let v = self.pop(pc)?;
                    *self.local(pc, i)? = v;
                }
                Op::Inc(i) => {
                    let v = *self.local(pc, i)?;
                    *self.local(pc, i)? = arith(pc, Arith::Add, v, Int(1))?;
                }
                Op::Dec(i) => {
                    let v = *self.local(pc, i)?;
                    *self.local(pc, i)? = arith(pc, Arith::Sub, v, Int(1))?;
                }
                Op::AddI(k) => {
                    let v = self.pop(pc)?;
                    let r = arith(pc, Arith::Add, v, Int(k as i64))?;
                    self.push(pc, r)?;
                }
                Op::Add => self.binop(pc, Arith::Add)?,
                Op::Sub => self.binop(pc, Arith::Sub)?,
                Op::Mul => self.binop(pc, Arith::Mul)?,
                Op::Div => self.binop(pc, Arith::Div)?,
                Op::Mod => self.binop(pc, Arith::Mod)?,
                Op::And => self.binop(pc, Arith::And)?,
                Op::Or => self.binop(pc, Arith::Or)?,
                Op::Xor => self.binop(pc, Arith::Xor)?,
                Op::Shl => self.binop(pc, Arith::Shl)?,
                Op::Shr => self.binop(pc, Arith::Shr)?,
                Op::Min => self.binop(pc, Arith::Min)?,
                Op::Max => self.binop(pc, Arith::Max)?,
                Op::Neg => {
                    let v = self.pop(pc)?;
                    let r = arith(pc, Arith::Sub, Int(0), v)?;
                    self.push(pc, r)?;
                }
                Op::Abs => {
                    let v = self.pop(pc)?;
                    let r = match v {
                        Int(i) if i >= 0 => v,
                        Big(b) if b >= 0 => v,
                        _ => arith(pc, Arith::Sub, Int(0), v)?,
                    };
                    self.push(pc, r)?;
                }
                Op::Not => {
                    let v = self.pop(pc)?;
                    self.push(pc, Bool(!v.truthy()))?;
                }
                Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge => self.cmp(pc, op)?,
                Op::Jmp(t) => next = self.jump(pc, t)?,
                Op::Jz(t) => {
                    if !self.pop(pc)?.truthy() {
                        next = self.jump(pc, t)?;
                    }
                }
                Op::Jnz(t) => {
                    if self.pop(pc)?.truthy() {
                        next = self.jump(pc, t)?;
                    }
                }
                Op::Call(t, nargs) => {
                    if self.frames.len() >= MAX_FRAMES {
                        return Err(VmError::StackOverflow { pc });
                    }
                    let base = self.locals.len();
                    self.locals.resize(base + LOCALS_PER_FRAME, Nil);
                    for k in (0..nargs as usize).rev() {
                        let v = self.pop(pc)?;
                        self.locals[base + k] = v;
                    }
                    self.frames.push((pc + 1, base));
                    next = self.jump(pc, t)?;
                }
                Op::Ret => match self.frames.pop() {
                    Some((ret, base)) => {
                        self.locals.truncate(base);
                        next = ret;
                    }
                    None => return Ok(()),
                },
                Op::ALoad => {
                    let i = self.pop(pc)?;
                    let v = self.mem[self.index(pc, i)?];
                    self.push(pc, v)?;
                }
                Op::AStore => {
                    let i = self.pop(pc)?;
                    let v = self.pop(pc)?;
                    let k = self.index(pc, i)?;
                    self.mem[k] = v;
                }
                Op::ALen => {
                    let n = self.mem.len() as i64;
                    self.push(pc, Int(n))?;
                }
                Op::Emit => {
                    let v = self.pop(pc)?;
                    self.emitted.push(v);
                }
                Op::Assert => {
                    if !self.pop(pc)?.truthy() {
                        return Err(VmError::AssertFailed { pc });
                    }
                }
                Op::Trace => {
                    let v = self.stack.last().copied().unwrap_or(Nil);
                    let bits = match v {
                        Nil => 0,
                        Bool(b) => b as u64,
                        Int(i) => i as u64,
                        Big(b) => (b as u64) ^ ((b >> 64) as u64),
                    };
                    self.trace = self.trace.rotate_left(5) ^ bits;
                }
            }
            pc = next;
        }
    }
}

/// A two-pass assembler with named labels.
#[derive(Default)]
pub struct Asm {
    code: Vec<Op>,
    labels: HashMap<String, u32>,
    fixups: Vec<(usize, String)>,
}

impl Asm {
    pub fn op(&mut self, op: Op) -> &mut Self {
        self.code.push(op);
        self
    }
    pub fn ops(&mut self, ops: &[Op]) -> &mut Self {
        self.code.extend_from_slice(ops);
        self
    }
    pub fn label(&mut self, name: &str) -> &mut Self {
        self.labels.insert(name.to_string(), self.code.len() as u32);
        self
    }
    fn to(&mut self, op: fn(u32) -> Op, name: &str) -> &mut Self {
        self.fixups.push((self.code.len(), name.to_string()));
        self.code.push(op(u32::MAX));
        self
    }
    pub fn jmp(&mut self, name: &str) -> &mut Self {
        self.to(Op::Jmp, name)
    }
    pub fn jz(&mut self, name: &str) -> &mut Self {
        self.to(Op::Jz, name)
    }
    pub fn jnz(&mut self, name: &str) -> &mut Self {
        self.to(Op::Jnz, name)
    }
    pub fn call(&mut self, name: &str, nargs: u8) -> &mut Self {
        self.fixups.push((self.code.len(), name.to_string()));
        self.code.push(Op::Call(u32::MAX, nargs));
        self
    }
    pub fn finish(mut self) -> Vec<Op> {
        for (at, name) in std::mem::take(&mut self.fixups) {
            let t = *self
                .labels
                .get(&name)
                .unwrap_or_else(|| panic!("undefined label {name}"));
            self.code[at] = match self.code[at] {
                Op::Jmp(_) => Op::Jmp(t),
                Op::Jz(_) => Op::Jz(t),
                Op::Jnz(_) => Op::Jnz(t),
                Op::Call(_, n) => Op::Call(t, n),
                other => other,
            };
        }
        self.code
    }
}

use Op::*;

/// Counts primes below `n` with a sieve in VM memory (needs mem >= n).
pub fn sieve(n: i64) -> Vec<Op> {
    let mut a = Asm::default();
    // locals: 0 = i, 1 = j, 2 = count
    a.ops(&[Push(2), Store(0), Push(0), Store(2)]);
    a.label("outer").ops(&[Load(0), Push(n), Lt]).jz("done");
    a.ops(&[Load(0), ALoad]).jnz("next");
    a.ops(&[Inc(2), Load(0), Dup, Mul, Store(1)]);
    a.label("inner").ops(&[Load(1), Push(n), Lt]).jz("next");
    a.ops(&[Push(1), Load(1), AStore, Load(1), Load(0), Add, Store(1)])
        .jmp("inner");
    a.label("next").op(Inc(0)).jmp("outer");
    a.label("done").ops(&[Load(2), Emit, Halt]);
    a.finish()
}

/// Sum of Collatz trajectory lengths for 1..m.
pub fn collatz(m: i64) -> Vec<Op> {
    let mut a = Asm::default();
    // locals: 0 = i, 1 = x, 2 = total
    a.ops(&[Push(1), Store(0), Push(0), Store(2)]);
    a.label("outer").ops(&[Load(0), Push(m), Lt]).jz("done");
    a.ops(&[Load(0), Store(1)]);
    a.label("step").ops(&[Load(1), Push(1), Ne]).jz("next");
    a.op(Inc(2));
    a.ops(&[Load(1), Push(1), And]).jz("even");
    a.ops(&[Load(1), Push(3), Mul, AddI(1), Store(1)])
        .jmp("step");
    a.label("even")
        .ops(&[Load(1), Push(1), Shr, Store(1)])
        .jmp("step");
    a.label("next").op(Inc(0)).jmp("outer");
    a.label("done").ops(&[Load(2), Emit, Halt]);
    a.finish()
}

/// Naive recursive Fibonacci (exercises Call/Ret and frames).
pub fn fib(k: i64) -> Vec<Op> {
    let mut a = Asm::default();
    a.op(Push(k)).call("fib", 1).ops(&[Emit, Halt]);
    a.label("fib").ops(&[Load(0), Push(2), Lt]).jz("rec");
    a.ops(&[Load(0), Ret]);
    a.label("rec").ops(&[Load(0), AddI(-1)]).call("fib", 1);
    a.ops(&[Load(0), AddI(-2)]).call("fib", 1);
    a.ops(&[Add, Ret]);
    a.finish()
}

/// Fills memory with an LCG stream, insertion-sorts it, emits a weighted checksum.
pub fn sort(n: i64, seed: i64) -> Vec<Op> {
    let mut a = Asm::default();
    // locals: 0 = i, 1 = j, 2 = x, 3 = state, 4 = sum
    a.ops(&[Push(seed & 0x7fff_ffff), Store(3), Push(0), Store(0)]);
    a.label("fill").ops(&[Load(0), Push(n), Lt]).jz("sort");
    a.ops(&[
        Load(3),
        Push(1103515245),
        Mul,
        AddI(12345),
        Push(0x7fff_ffff),
        And,
        Dup,
        Store(3),
    ]);
    a.ops(&[Push(8), Shr, Push(100000), Mod, Load(0), AStore, Inc(0)])
        .jmp("fill");
    a.label("sort").ops(&[Push(1), Store(0)]);
    a.label("outer").ops(&[Load(0), Push(n), Lt]).jz("sum");
    a.ops(&[Load(0), ALoad, Store(2), Load(0), AddI(-1), Store(1)]);
    a.label("inner").ops(&[Load(1), Push(0), Ge]).jz("place");
    a.ops(&[Load(1), ALoad, Load(2), Gt]).jz("place");
    a.ops(&[Load(1), ALoad, Load(1), AddI(1), AStore, Dec(1)])
        .jmp("inner");
    a.label("place")
        .ops(&[Load(2), Load(1), AddI(1), AStore, Inc(0)])
        .jmp("outer");
    a.label("sum").ops(&[Push(0), Store(0), Push(0), Store(4)]);
    a.label("sl").ops(&[Load(0), Push(n), Lt]).jz("done");
    a.ops(&[
        Load(0),
        ALoad,
        Load(0),
        AddI(1),
        Mul,
        Load(4),
        Xor,
        Push(1),
        Shl,
        Push(0xffff_ffff_ffff),
        And,
        Store(4),
        Inc(0),
    ])
    .jmp("sl");
    a.label("done").ops(&[Load(4), Emit, Halt]);
    a.finish()
}

/// Sum over k < m of (k % 33)!, reduced mod 1e9+7 (factorials above 20! need 128 bits).
pub fn factorials(m: i64) -> Vec<Op> {
    let mut a = Asm::default();
    // locals: 0 = k, 1 = j, 2 = f, 3 = total
    a.ops(&[Push(0), Store(0), Push(0), Store(3)]);
    a.label("l").ops(&[Load(0), Push(m), Lt]).jz("done");
    a.ops(&[Push(1), Store(2), Load(0), Push(33), Mod, Store(1)]);
    a.label("f").ops(&[Load(1), Push(1), Gt]).jz("add");
    a.ops(&[Load(2), Load(1), Mul, Store(2), Dec(1)]).jmp("f");
    a.label("add")
        .ops(&[
            Load(3),
            Load(2),
            Add,
            Push(1_000_000_007),
            Mod,
            Store(3),
            Inc(0),
        ])
        .jmp("l");
    a.label("done").ops(&[Load(3), Emit, Load(2), Emit, Halt]);
    a.finish()
}

/// Sum of gcd(i, j) over 1..=m squared, with Euclid's algorithm via Mod, Swap, Rot and Over.
pub fn gcd_sum(m: i64) -> Vec<Op> {
    let mut a = Asm::default();
    // locals: 0 = i, 1 = j, 2 = sum
    a.ops(&[Push(1), Store(0), Push(0), Store(2)]);
    a.label("oi").ops(&[Load(0), Push(m), Le]).jz("done");
    a.ops(&[Push(1), Store(1)]);
    a.label("oj").ops(&[Load(1), Push(m), Le]).jz("ni");
    a.ops(&[Load(0), Load(1)]).call("gcd", 2);
    a.ops(&[Load(2), Add, Store(2), Inc(1)]).jmp("oj");
    a.label("ni").op(Inc(0)).jmp("oi");
    a.label("done").ops(&[Load(2), Emit, Halt]);
    // gcd(a, b): while b != 0 { (a, b) = (b, a % b) }
    a.label("gcd").ops(&[Load(0), Load(1)]);
    a.label("gl").ops(&[Dup, Not]).jnz("gd");
    a.ops(&[Dup, Rot, Swap, Mod]).jmp("gl");
    a.label("gd").ops(&[Pop, Abs, Ret]);
    a.finish()
}

/// A hash mixer over a xorshift stream using the bit ops (Xor, Shl, Shr, Or, Min, Max, Neg).
pub fn hash_mix(n: i64, seed: i64) -> Vec<Op> {
    let mut a = Asm::default();
    // locals: 0 = i, 1 = h, 2 = s, 3 = lo, 4 = hi
    a.ops(&[
        Push(0),
        Store(0),
        Push(seed),
        Store(2),
        Push(2166136261),
        Store(1),
    ]);
    a.ops(&[Push(i64::MAX), Store(3), Push(i64::MIN), Store(4)]);
    a.label("l").ops(&[Load(0), Push(n), Lt]).jz("done");
    a.ops(&[
        Load(2),
        Push(13),
        Shl,
        Load(2),
        Xor,
        Dup,
        Push(7),
        Shr,
        Xor,
        Dup,
        Push(17),
        Shl,
        Xor,
        Store(2),
    ]);
    a.ops(&[
        Load(1),
        Load(2),
        Push(255),
        And,
        Xor,
        Push(16777619),
        Mul,
        Push(0xffff_ffff),
        And,
        Store(1),
    ]);
    a.ops(&[
        Load(2),
        Push(1023),
        And,
        Dup,
        Load(3),
        Min,
        Store(3),
        Load(4),
        Max,
        Store(4),
    ]);
    a.ops(&[Load(2), Push(4095), And]).jnz("skip");
    a.ops(&[Load(1), Neg, Push(3), Or, Trace, Pop]);
    a.label("skip").op(Inc(0)).jmp("l");
    a.label("done")
        .ops(&[Load(1), Emit, Load(3), Emit, Load(4), Emit, Halt]);
    a.finish()
}

/// Program name, code, memory size.
pub fn suite(n: u64, seed: u64) -> Vec<(&'static str, Vec<Op>, usize)> {
    let n = n as i64;
    let s = (seed as i64) & 0xFFFF_FFFF;
    vec![
        ("sieve", sieve(n * 200), (n * 200) as usize),
        ("collatz", collatz(n * 12), 0),
        ("fib", fib(17 + (n / 200).min(8)), 0),
        ("sort", sort(n, s), n as usize),
        ("gcd", gcd_sum(n / 6), 0),
        ("hash", hash_mix(n * 100, s | 1), 0),
        ("fact", factorials(n * 4), 0),
    ]
}
