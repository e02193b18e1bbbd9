//! Means with a sample size and a 95% confidence interval (Student's t).

use serde::{Deserialize, Serialize};

/// A mean over `n` values with the half-width of its 95% confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The mean.
    pub mean: f64,
    /// How many values.
    pub n: usize,
    /// Half-width of the 95% interval; `None` with fewer than two values.
    pub ci95: Option<f64>,
}

impl Estimate {
    /// The estimate over `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Self> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let ci95 = (n >= 2).then(|| {
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            t_975(n - 1) * (var / n as f64).sqrt()
        });
        Some(Self { mean, n, ci95 })
    }
}

/// The 97.5th percentile of Student's t with `df` degrees of freedom.
pub fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => TABLE[df - 1],
        31..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_worked_interval() {
        // values 1,2,3: mean 2, s = 1, se = 1/sqrt(3), t(2) = 4.303 → 2.4843…
        let e = Estimate::of(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!((e.mean, e.n), (2.0, 3));
        assert!((e.ci95.unwrap() - 4.303 / 3f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn degenerate_samples() {
        assert_eq!(Estimate::of(&[]), None);
        assert_eq!(
            Estimate::of(&[5.0]),
            Some(Estimate {
                mean: 5.0,
                n: 1,
                ci95: None
            })
        );
        assert_eq!(Estimate::of(&[4.0, 4.0]).unwrap().ci95, Some(0.0));
    }
}
