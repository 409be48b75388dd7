use super::*;
use crate::show::help::{examples, TOP};

#[test]
fn every_command_has_examples() {
    for sc in Cli::command().get_subcommands() {
        let name = sc.get_name();
        let text = examples(name).unwrap_or_else(|| panic!("{name} has no examples"));
        assert!(text.starts_with("Examples:\n"), "{name}");
        assert!(text.contains("rotabloom"), "{name}");
    }
}

#[test]
fn help_is_for_an_installed_user() {
    // No path of this repository: an installed user has none of it.
    let mut texts = vec![TOP.to_string()];
    let mut cmd = command();
    texts.push(cmd.render_long_help().to_string());
    for sc in cmd.get_subcommands_mut() {
        texts.push(sc.render_long_help().to_string());
    }
    for text in &texts {
        // A repository path, not the published URL's `.../source/docs/`.
        let bad = [
            " docs/",
            "(docs/",
            "seed 000",
            "LEGACY.md",
            "FORMAT.md",
            "config/rotabloom",
        ];
        for bad in bad {
            assert!(!text.contains(bad), "{bad:?} in {text}");
        }
    }
}
