//! The one-line progress bar that long commands (`verify`, `replicate`) draw on stderr
//! when it is a terminal.

use std::io::Write;

/// Redraw `line()` in place every 200 ms until the task is aborted.
pub(crate) async fn redraw(line: impl Fn() -> String) {
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(200));
    loop {
        tick.tick().await;
        // A progress line that cannot be written is not worth failing the command for.
        let _ = write!(std::io::stderr(), "\r\x1b[2K{}", line());
    }
}

/// `[####      ]`: 30 cells, `frac` of them filled with `fill`.
pub(crate) fn bar(frac: f64, fill: char) -> String {
    let filled = (frac.clamp(0.0, 1.0) * 30.0) as usize;
    format!(
        "[{}{}]",
        fill.to_string().repeat(filled),
        " ".repeat(30 - filled)
    )
}
