//! The loss-curve chart: training loss per epoch of each network, one SVG file.

use anyhow::{Context, Result};
use plotters::prelude::*;
use std::path::Path;

/// One network's mean training loss per epoch.
#[derive(Debug, Clone)]
pub struct LossCurve {
    pub network: &'static str,
    pub losses: Vec<f64>,
}

const COLOURS: [RGBColor; 4] = [BLUE, RED, GREEN, MAGENTA];

/// Writes the curves to `path` as an SVG line chart (epochs on x, loss on a log y axis).
pub fn write_loss_chart(path: &Path, curves: &[LossCurve]) -> Result<()> {
    let epochs = curves
        .iter()
        .map(|curve| curve.losses.len())
        .max()
        .unwrap_or(1)
        .max(2);
    let positive = |loss: &f64| loss.is_finite() && *loss > 0.0;
    let (low, high) = curves
        .iter()
        .flat_map(|curve| curve.losses.iter().copied().filter(positive))
        .fold((f64::INFINITY, 0.0f64), |(low, high), loss| {
            (low.min(loss), high.max(loss))
        });
    let (low, high) = if low.is_finite() {
        (low * 0.8, high * 1.25)
    } else {
        (1e-3, 10.0)
    };
    let root = SVGBackend::new(path, (720, 440)).into_drawing_area();
    root.fill(&WHITE).context("chart background")?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Training loss on 8x8 digits (nxvk)", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(1..epochs, (low..high).log_scale())
        .context("chart axes")?;
    chart
        .configure_mesh()
        .x_desc("epoch")
        .y_desc("mean cross-entropy")
        .draw()
        .context("chart mesh")?;
    for (curve, colour) in curves.iter().zip(COLOURS.iter().cycle()) {
        let points = curve
            .losses
            .iter()
            .enumerate()
            .filter(|(_, loss)| positive(loss))
            .map(|(epoch, &loss)| (epoch + 1, loss));
        chart
            .draw_series(LineSeries::new(points, colour))
            .context("chart series")?
            .label(curve.network)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], colour));
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE)
        .draw()
        .context("chart legend")?;
    root.present()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
