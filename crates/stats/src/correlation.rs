//! Rank correlation: how consistently one quantity rises with another, whatever the shape of
//! the rise. Used to ask whether a program's time follows a network parameter across stacks
//! and whether an added cost grows with the message size; a straight-line fit would answer for
//! straight lines only.

/// The ranks of `values`, 1-based, in their own order: the smallest value gets 1, and values
/// that tie share the mean of the ranks they span (`[5, 1, 5]` → `[2.5, 1, 2.5]`). Ordered by
/// [`f64::total_cmp`]; a NaN equals nothing, so it never ties (see [`spearman`], which refuses
/// NaNs).
pub fn ranks(values: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut r = vec![0.0; values.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && values[idx[j + 1]] == values[idx[i]] {
            j += 1;
        }
        // Positions i..=j (0-based) hold ranks i + 1 ..= j + 1; their mean:
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            r[k] = avg;
        }
        i = j + 1;
    }
    r
}

/// Spearman's rank correlation of the pairs `(x[i], y[i])`: Pearson's correlation of their
/// [`ranks`] (ties averaged), in `−1..=1`.
///
/// Returns `None` when it is undefined: slices of different lengths, fewer than two pairs,
/// either side with a single rank (all its values equal), or any NaN (a sample that measured
/// nothing has no rank; a caller that can drop such pairs does so first).
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 2 || x.iter().chain(y).any(|v| v.is_nan()) {
        return None;
    }
    let (rx, ry) = (ranks(x), ranks(y));
    let n = x.len() as f64;
    let (mx, my) = (rx.iter().sum::<f64>() / n, ry.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in rx.iter().zip(&ry) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_average_ties_and_keep_the_input_order() {
        assert_eq!(ranks(&[]), Vec::<f64>::new());
        assert_eq!(ranks(&[4.0]), [1.0]);
        assert_eq!(ranks(&[30.0, 10.0, 20.0]), [3.0, 1.0, 2.0]);
        // 5 and 5 span ranks 2 and 3: both get 2.5.
        assert_eq!(ranks(&[5.0, 1.0, 5.0]), [2.5, 1.0, 2.5]);
        // Three 7s span ranks 1, 2, 3: each gets 2; the 9 gets 4.
        assert_eq!(ranks(&[7.0, 9.0, 7.0, 7.0]), [2.0, 4.0, 2.0, 2.0]);
    }

    #[test]
    fn monotone_pairs_correlate_exactly() {
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), Some(1.0));
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), Some(-1.0));
        // Unsorted input, any monotone shape: x ranks 2, 3, 1 and y ranks 2, 3, 1 → 1.
        assert_eq!(spearman(&[5.0, 50.0, 0.5], &[1.0, 1e6, 0.0]), Some(1.0));
    }

    #[test]
    fn ties_take_their_mean_rank() {
        // x ranks 1, 2.5, 2.5, 4 (mean 2.5), y ranks 1, 2, 3, 4 (mean 2.5):
        // Σdx·dy = (−1.5)(−1.5) + 0·(−0.5) + 0·0.5 + 1.5·1.5 = 4.5,
        // Σdx² = 2.25 + 0 + 0 + 2.25 = 4.5, Σdy² = 2.25 + 0.25 + 0.25 + 2.25 = 5,
        // ρ = 4.5 / √(4.5 · 5) = √0.9.
        let r = spearman(&[1.0, 5.0, 5.0, 9.0], &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!((r - 0.9f64.sqrt()).abs() < 1e-15, "{r}");
        assert!((r - 4.5 / (4.5f64 * 5.0).sqrt()).abs() < 1e-12, "{r}");
        // x ranks 1, 2, 3, 4 against y ranks 2, 1, 3.5, 3.5 (mean 2.5):
        // Σdx·dy = (−1.5)(−0.5) + (−0.5)(−1.5) + 0.5·1 + 1.5·1 = 3.5,
        // Σdx² = 5, Σdy² = 0.25 + 2.25 + 1 + 1 = 4.5, ρ = 3.5 / √22.5.
        let r = spearman(&[1.0, 2.0, 3.0, 4.0], &[20.0, 10.0, 40.0, 40.0]).unwrap();
        assert!((r - 3.5 / 22.5f64.sqrt()).abs() < 1e-15, "{r}");
    }

    #[test]
    fn undefined_correlations_are_none() {
        assert_eq!(spearman(&[], &[]), None);
        assert_eq!(spearman(&[1.0], &[1.0]), None);
        assert_eq!(spearman(&[1.0, 2.0], &[1.0]), None, "length mismatch");
        // One side all equal: a single rank, no variance.
        assert_eq!(spearman(&[1.0, 1.0], &[1.0, 2.0]), None);
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[4.0, 4.0, 4.0]), None);
        // A NaN has no rank.
        assert_eq!(spearman(&[1.0, f64::NAN, 3.0], &[1.0, 2.0, 3.0]), None);
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[1.0, 2.0, f64::NAN]), None);
    }

    #[test]
    fn infinities_rank_as_the_extremes() {
        // x ranks 3, 1, 2 and y ranks 3, 1, 2: +∞ is simply the largest.
        assert_eq!(
            spearman(&[f64::INFINITY, -1.0, 0.0], &[9.0, 1.0, 2.0]),
            Some(1.0)
        );
    }
}
