//! "Did you mean": the name closest to one that was not found.

/// The candidate closest to `wanted`, if one is close enough to be a
/// slip of the fingers: Jaro-Winkler similarity of at least 0.8, the
/// threshold clap uses for its own suggestions, or a difference of case
/// only.
pub fn did_you_mean<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .filter(|c| *c != wanted)
        .map(|c| {
            let score = if c.eq_ignore_ascii_case(wanted) {
                1.0
            } else {
                strsim::jaro_winkler(wanted, c)
            };
            (score, c)
        })
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::did_you_mean;

    #[test]
    fn suggests_only_near_names() {
        let names = ["crawl", "recrawl", "myspider:dupefilter", "growing"];
        assert_eq!(did_you_mean("crwal", names), Some("crawl"));
        assert_eq!(did_you_mean("recrwal", names), Some("recrawl"));
        assert_eq!(did_you_mean("Crawl", names), Some("crawl"));
        assert_eq!(
            did_you_mean("myspider:dupfilter", names),
            Some("myspider:dupefilter")
        );
        assert_eq!(did_you_mean("zebra", names), None);
        assert_eq!(did_you_mean("crawl", ["crawl"]), None);
        assert_eq!(did_you_mean("x", std::iter::empty()), None);
    }
}
