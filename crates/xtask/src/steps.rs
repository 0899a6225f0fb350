//! Running a command as a named step, with its timing, failing loudly.

use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context};

/// Runs `command` with inherited stdio; an unsuccessful exit is an error naming the step.
pub fn run(name: &str, command: &mut Command) -> anyhow::Result<()> {
    println!("==> {name}");
    let started = Instant::now();
    let status = command
        .status()
        .with_context(|| format!("{name}: cannot start {:?}", command.get_program()))?;
    if !status.success() {
        bail!("{name} failed ({status})");
    }
    println!("==> {name}: ok in {:.0}s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Does `work` as a named step, with its timing; its error names the step.
pub fn timed<T>(name: &str, work: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    println!("==> {name}");
    let started = Instant::now();
    let done = work().with_context(|| format!("{name} failed"))?;
    println!("==> {name}: ok in {:.0}s", started.elapsed().as_secs_f64());
    Ok(done)
}

/// Runs `command` quietly and returns its stdout, or `None` if it cannot run or fails.
pub fn output(command: &mut Command) -> Option<String> {
    let out = command.output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}
