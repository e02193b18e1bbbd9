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
/// when it is neither; past `MOST_PLACES`, `>` or `<` the nearest figure inside the bounds.
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

/// A confidence threshold `at` (one of the confidences it is set among) written with as few
/// digits as keep what it trusts: never rounded up (0.9498 is not "0.95", which would trust
/// fewer), cut to two places or more until no confidence `below` it (the surest one under it)
/// reaches the written value, with at most six significant digits (a tiny threshold, such as
/// 5e-324, in exponent form). What `--go-real-below` given this text trusts is exactly what
/// the row counts; only confidences closer than six digits tell apart need more, and then the
/// text is the shortest that reads back as `at`.
pub fn threshold(at: f64, below: Option<f64>) -> String {
    let trusts_the_same = |text: &str| {
        text.parse::<f64>()
            .is_ok_and(|v| v <= at && below.is_none_or(|b| b < v))
    };
    // Cut, never rounded: a decimal string cut short reads back at most `at`.
    let full = format!("{at}");
    let Some((whole, decimals)) = full.split_once('.') else {
        return format!("{at:.2}");
    };
    let leading_zeros = if whole.trim_start_matches('-') == "0" {
        decimals.bytes().take_while(|d| *d == b'0').count()
    } else {
        0
    };
    if decimals.len() < 2 {
        return format!("{at:.2}");
    }
    // Fixed places, for a threshold of 0.0001 or more, while the digits after the leading
    // zeros are at most six.
    let places = if leading_zeros < 4 {
        decimals.len().min(leading_zeros + SIGNIFICANT)
    } else {
        0
    };
    for k in 2..=places {
        let cut = format!("{whole}.{}", &decimals[..k]);
        if trusts_the_same(&cut) {
            return cut;
        }
    }
    // A tiny threshold: its significant digits in exponent form.
    let exact = format!("{at:e}");
    if let Some((mantissa, exponent)) = exact.split_once('e') {
        let digits: usize = mantissa.chars().filter(char::is_ascii_digit).count();
        for d in 1..=digits.min(SIGNIFICANT) {
            // The mantissa's first `d` digits (and its point after the first).
            let cut: String = mantissa
                .chars()
                .take(if d == 1 { 1 } else { d + 1 })
                .collect();
            let text = format!("{cut}e{exponent}");
            if trusts_the_same(&text) {
                return text;
            }
        }
    }
    // Closer than six digits tell apart: the shortest text that is exactly `at`.
    if full.len() <= exact.len() + 2 {
        full
    } else {
        exact
    }
}

/// Most significant digits a threshold is written with, when fewer keep what it trusts.
const SIGNIFICANT: usize = 6;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threshold_is_never_rounded_up_past_what_it_trusts() {
        // 0.9498 with 0.9 under it: 0.94 trusts the same (0.95 would trust fewer).
        assert_eq!(threshold(0.9498, Some(0.9)), "0.94");
        // With 0.945 under it, two places would trust 0.945 too: three are needed.
        assert_eq!(threshold(0.9498, Some(0.945)), "0.949");
        assert_eq!(threshold(0.9498, Some(0.9497)), "0.9498");
        assert_eq!(threshold(0.225, Some(0.1)), "0.22");
        assert_eq!(threshold(0.95, Some(0.9)), "0.95");
        assert_eq!(threshold(0.9, None), "0.90");
        assert_eq!(threshold(1.0, Some(0.5)), "1.00");
        assert_eq!(threshold(0.0, None), "0.00");
        // Hardening VI: a tiny threshold is a few digits in exponent form, never 320 of
        // them, and still trusts exactly what `at` does.
        assert_eq!(threshold(5e-324, Some(0.0)), "5e-324");
        assert_eq!(threshold(1.234567891e-9, Some(1e-9)), "1.2e-9");
        for (at, below) in [
            (5e-324, Some(0.0)),
            (3.3e-20, None),
            (0.000123456789, Some(0.0001)),
        ] {
            let text = threshold(at, below);
            assert!(text.len() <= 14, "{text}");
        }
        // Whatever the numbers, the text trusts exactly what `at` does.
        for (at, below) in [
            (0.8993, 0.8992),
            (0.77001, 0.77),
            (0.5, 0.49999999),
            (5e-324, 0.0),
            (1e-9, 9.9e-10),
        ] {
            let shown: f64 = threshold(at, Some(below)).parse().unwrap();
            assert!(shown <= at && shown > below, "{at} {below} {shown}");
        }
    }

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
