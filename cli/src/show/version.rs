//! `rotabloom --version`: the version, the commit it was built from, the
//! target, the format it speaks and the features compiled in (the commit
//! and target come from build.rs).

use std::sync::OnceLock;

/// The features compiled in, `+` on, `-` off (as ripgrep lists its own).
fn features() -> String {
    let cluster = if cfg!(feature = "cluster") { '+' } else { '-' };
    // TLS (rustls) and Sentinel are always in the library.
    format!("{cluster}cluster +sentinel +tls-rustls +unix-socket")
}

/// What `--version` prints after the name.
pub fn long() -> &'static str {
    static LONG: OnceLock<String> = OnceLock::new();
    LONG.get_or_init(|| {
        format!(
            "{}\ncommit:   {}\ntarget:   {}\nformat:   {}\nfeatures: {}",
            env!("CARGO_PKG_VERSION"),
            env!("ROTABLOOM_COMMIT"),
            env!("ROTABLOOM_TARGET"),
            rotabloom::FORMAT_VERSION,
            features()
        )
    })
}
