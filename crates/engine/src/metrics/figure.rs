//! How a bounded figure is written, everywhere one is shown (the explorer's views, `report`'s
//! tables): a rate or a mean in [0, 1] never reads as one of its bounds unless it is exactly
//! that bound. One failure in 2,000 calls is a success rate of 99.95%, not "100%": rounding
//! to the usual places would state that nothing failed.

/// The most places a figure is widened to before it is written as beyond its last place
/// (`>99.99%`, `<0.01%`).
const MOST_PLACES: usize = 4;

/// `value` (a fraction in [0, 1]) as a percentage with `places` decimals and a `%`, widened
/// by as many places as it takes not to read `0` or `100` when it is neither.
pub fn percent(value: f64, places: usize) -> String {
    format!("{}%", within(value * 100.0, 100.0, places))
}

/// `value` (a fraction in [0, 1], such as a fidelity) with `places` decimals, the same rule.
pub fn fraction(value: f64, places: usize) -> String {
    within(value, 1.0, places)
}

/// `value` in `[0, top]` with `places` decimals, widened until it reads as neither bound
/// when it is neither; past [`MOST_PLACES`], `>` or `<` the nearest figure inside the bounds.
pub fn within(value: f64, top: f64, places: usize) -> String {
    if !value.is_finite() || value <= 0.0 || value >= top {
        return format!("{value:.places$}");
    }
    for p in places..=places.max(MOST_PLACES) {
        let text = format!("{value:.p$}");
        let shown: f64 = text.parse().unwrap_or(value);
        if shown > 0.0 && shown < top {
            return text;
        }
    }
    let p = places.max(MOST_PLACES);
    let step = 10f64.powi(-(p as i32));
    if value < top / 2.0 {
        format!("<{step:.p$}")
    } else {
        format!(">{:.p$}", top - step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_reads_as_a_bound_only_when_it_is_one() {
        assert_eq!(percent(1.0, 0), "100%");
        assert_eq!(percent(0.0, 0), "0%");
        assert_eq!(percent(0.75, 0), "75%");
        assert_eq!(percent(1999.0 / 2000.0, 0), "99.95%");
        assert_eq!(percent(1.0 / 2000.0, 0), "0.1%");
        assert_eq!(percent(1.0 / 20000.0, 0), "0.01%");
        assert_eq!(percent(0.996, 0), "99.6%");
        assert_eq!(within(99.96, 100.0, 1), "99.96");
        assert_eq!(within(9.99, 10.0, 1), "9.99");
        assert_eq!(fraction(0.996, 2), "0.996");
        assert_eq!(fraction(0.004, 2), "0.004");
        assert_eq!(fraction(0.5, 2), "0.50");
        assert_eq!(fraction(1.0, 2), "1.00");
        // Past four places, it says which side of the last one it lies.
        assert_eq!(percent(1.0 - 1e-9, 0), ">99.9999%");
        assert_eq!(fraction(1e-9, 2), "<0.0001");
    }

    #[test]
    fn no_value_strictly_inside_reads_as_a_bound() {
        let mut x = 1e-7_f64;
        while x < 1.0 {
            for v in [x, 1.0 - x] {
                for places in 0..3 {
                    for text in [percent(v, places), fraction(v, places)] {
                        let digits = text.trim_start_matches(['<', '>']).trim_end_matches('%');
                        let shown: f64 = digits.parse().unwrap();
                        let top = if text.ends_with('%') { 100.0 } else { 1.0 };
                        assert!(shown > 0.0 && shown < top, "{v} read as {text}");
                    }
                }
            }
            x *= 1.7;
        }
    }
}
