//! Table 14-1 of seed 004 (false-positive rate by m/n and k), reproduced
//! cell by cell by `false_positive_rate`, within the table's rounding (three
//! significant digits).

use rotabloom::{false_positive_rate, optimal_hashes};

fn table() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/data/fpr-table-14-1.tsv"
    );
    match std::fs::read_to_string(path) {
        Ok(t) => t,
        // A copy lives in the repository for clones without ../shared.
        Err(_) => include_str!("data/fpr-table-14-1.tsv").to_string(),
    }
}

#[test]
fn every_cell_of_table_14_1() {
    let mut cells = 0;
    for line in table()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("m_over_n"))
    {
        let cols: Vec<&str> = line.split('\t').collect();
        let ratio: u64 = cols[0].parse().unwrap();
        let opt_k: f64 = cols[1].parse().unwrap();
        let exact_k = ratio as f64 * std::f64::consts::LN_2;
        assert!(
            (exact_k - opt_k).abs() <= 0.05 + 1e-9,
            "m/n {ratio}: optimal k {exact_k} vs {opt_k}"
        );
        assert_eq!(
            optimal_hashes(ratio * 1000, 1000).unwrap(),
            exact_k.round() as u32
        );
        for (k, cell) in cols[2..].iter().enumerate() {
            if cell.trim().is_empty() {
                continue;
            }
            let want: f64 = cell.trim().parse().unwrap();
            // n = 1e6 makes (1 - 1/m)^(kn) indistinguishable from e^(-kn/m).
            let got = false_positive_rate(ratio * 1_000_000, k as u32 + 1, 1_000_000);
            // The table has three significant digits: half a unit in the last.
            let digits = cell.trim().trim_start_matches("0.").trim_start_matches('0');
            let sig = digits.split('e').next().unwrap().replace('.', "").len() as i32;
            let scale = 10f64.powi(want.abs().log10().floor() as i32 - sig + 1);
            assert!(
                (got - want).abs() <= scale / 2.0 + 1e-12,
                "m/n {ratio} k {}: {got} vs {want} (±{})",
                k + 1,
                scale / 2.0
            );
            cells += 1;
        }
    }
    // 31 rows; rows 2..8 are partial (2+3+4+5+6+6+7), rows 9..32 full (24 x 8).
    assert_eq!(cells, 225, "cells checked: {cells}");
}
