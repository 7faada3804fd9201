//! A hand-written SVG bar chart of B/A median ratios per (host, workload).
//!
//! Rejected alternative: plotters and friends pull in font or C dependencies for what is a
//! few dozen lines of SVG. Bars grow from a baseline at ratio 1.0; green = B wins, red =
//! A wins, grey = no difference.

use crate::decision::Outcome;

/// One bar.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioBar {
    /// Label under the bar (`host / workload`).
    pub label: String,
    /// Median of B over median of A.
    pub ratio: f64,
    /// The verdict, which picks the colour.
    pub outcome: Outcome,
}

const BAR_WIDTH: f64 = 48.0;
const GAP: f64 = 24.0;
const PLOT_HEIGHT: f64 = 240.0;
const MARGIN_LEFT: f64 = 60.0;
const MARGIN_TOP: f64 = 40.0;
const LABEL_SPACE: f64 = 120.0;

/// Escapes text for SVG.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Renders the chart as a complete SVG document.
pub fn ratio_chart_svg(title: &str, bars: &[RatioBar]) -> String {
    let finite: Vec<f64> = bars
        .iter()
        .map(|bar| bar.ratio)
        .filter(|ratio| ratio.is_finite())
        .collect();
    // Symmetric scale around 1.0, at least +-10 %, so small effects stay visibly small.
    let reach = finite
        .iter()
        .map(|ratio| (ratio - 1.0).abs())
        .fold(0.1_f64, f64::max)
        * 1.1;
    let (low, high) = (1.0 - reach, 1.0 + reach);
    let y_of =
        |ratio: f64| MARGIN_TOP + (high - ratio.clamp(low, high)) / (high - low) * PLOT_HEIGHT;
    // Wide enough for the bars and for the title (about 9 px per character at 16 px).
    let bars_width = MARGIN_LEFT + bars.len().max(1) as f64 * (BAR_WIDTH + GAP) + GAP;
    let width = bars_width.max(MARGIN_LEFT + title.chars().count() as f64 * 9.0);
    let height = MARGIN_TOP + PLOT_HEIGHT + LABEL_SPACE;
    let baseline = y_of(1.0);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{MARGIN_LEFT}\" y=\"24\" font-size=\"16\">{}</text>\n",
        escape(title)
    );
    for tick in [low, 1.0, high] {
        let y = y_of(tick);
        svg.push_str(&format!(
            "<line x1=\"{MARGIN_LEFT}\" y1=\"{y:.1}\" x2=\"{width:.0}\" y2=\"{y:.1}\" stroke=\"#ccc\"/>\n\
             <text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\">{tick:.2}</text>\n",
            MARGIN_LEFT - 6.0,
            y + 4.0
        ));
    }
    for (index, bar) in bars.iter().enumerate() {
        let x = MARGIN_LEFT + GAP + index as f64 * (BAR_WIDTH + GAP);
        let top = y_of(bar.ratio).min(baseline);
        let bar_height = (y_of(bar.ratio) - baseline).abs().max(1.0);
        let colour = match bar.outcome {
            Outcome::BWins => "#2e7d32",
            Outcome::AWins => "#c62828",
            Outcome::NoDifference => "#9e9e9e",
        };
        let label_x = x + BAR_WIDTH / 2.0;
        let label_y = MARGIN_TOP + PLOT_HEIGHT + 14.0;
        svg.push_str(&format!(
            "<rect x=\"{x:.1}\" y=\"{top:.1}\" width=\"{BAR_WIDTH}\" height=\"{bar_height:.1}\" fill=\"{colour}\">\
             <title>{label}: B/A = {ratio:.4}</title></rect>\n\
             <text x=\"{label_x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{ratio:.3}</text>\n\
             <text transform=\"translate({label_x:.1},{label_y:.1}) rotate(40)\">{label}</text>\n",
            top - 4.0,
            label = escape(&bar.label),
            ratio = bar.ratio,
        ));
    }
    svg.push_str(&format!(
        "<line x1=\"{MARGIN_LEFT}\" y1=\"{baseline:.1}\" x2=\"{width:.0}\" y2=\"{baseline:.1}\" stroke=\"black\"/>\n</svg>\n"
    ));
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_has_one_bar_per_entry_and_escapes_labels() {
        let bars = [
            RatioBar {
                label: "h1 / w<1>".to_owned(),
                ratio: 0.9,
                outcome: Outcome::BWins,
            },
            RatioBar {
                label: "h2 / w".to_owned(),
                ratio: 1.2,
                outcome: Outcome::AWins,
            },
            RatioBar {
                label: "h3 / w".to_owned(),
                ratio: 1.0,
                outcome: Outcome::NoDifference,
            },
        ];
        let svg = ratio_chart_svg("race cse", &bars);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<rect x=").count(), 3);
        assert!(svg.contains("h1 / w&lt;1&gt;") && !svg.contains("w<1>"));
        assert!(svg.contains("#2e7d32") && svg.contains("#c62828") && svg.contains("#9e9e9e"));
        // A win (ratio < 1) is drawn below the baseline, a loss above it.
        let baseline_y = MARGIN_TOP + PLOT_HEIGHT / 2.0;
        assert!(svg.contains(&format!("y1=\"{baseline_y:.1}\"")));
    }

    #[test]
    fn empty_chart_is_valid() {
        let svg = ratio_chart_svg("empty", &[]);
        assert!(svg.contains("</svg>"));
    }
}
