//! The 8x8 digits data set (data/digits, from the scikit-learn wheel): loading and the
//! train/test split.

use anyhow::{Context, Result, bail};
use std::io::Read;
use std::path::Path;

/// Pixels per image (8x8) and the number of classes.
pub const PIXELS: usize = 64;
pub const CLASSES: usize = 10;

/// Images scaled to [0, 1] (pixels are counts 0..16), one row of [`PIXELS`] per image.
#[derive(Debug, Clone)]
pub struct Digits {
    pub images: Vec<f32>,
    pub labels: Vec<usize>,
}

impl Digits {
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn image(&self, index: usize) -> &[f32] {
        &self.images[index * PIXELS..(index + 1) * PIXELS]
    }

    fn push(&mut self, image: &[f32], label: usize) {
        self.images.extend_from_slice(image);
        self.labels.push(label);
    }
}

/// Reads `digits.csv.gz`: 64 pixel counts then the label per line.
pub fn load(path: &Path) -> Result<Digits> {
    let compressed =
        std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(compressed.as_slice())
        .read_to_string(&mut text)
        .with_context(|| format!("{} is not gzip text", path.display()))?;
    let mut digits = Digits {
        images: Vec::new(),
        labels: Vec::new(),
    };
    for (line_index, line) in text.lines().enumerate() {
        let values: Vec<u32> = line
            .split(',')
            .map(|field| field.trim().parse())
            .collect::<Result<_, _>>()
            .with_context(|| format!("{} line {}: not integers", path.display(), line_index + 1))?;
        let (Some((&label, pixels)), true) = (values.split_last(), values.len() == PIXELS + 1)
        else {
            bail!(
                "{} line {}: expected {} fields",
                path.display(),
                line_index + 1,
                PIXELS + 1
            );
        };
        if label as usize >= CLASSES || pixels.iter().any(|&pixel| pixel > 16) {
            bail!(
                "{} line {}: value out of range",
                path.display(),
                line_index + 1
            );
        }
        let image: Vec<f32> = pixels.iter().map(|&pixel| pixel as f32 / 16.0).collect();
        digits.push(&image, label as usize);
    }
    Ok(digits)
}

/// A fixed split: every fifth image (index % 5 == 0) is a test image, the rest train. The
/// file is ordered by writer, not by class, so this keeps both sets balanced (about 36 test
/// images per class) without a random seed to record.
pub fn split(digits: &Digits) -> (Digits, Digits) {
    let empty = || Digits {
        images: Vec::new(),
        labels: Vec::new(),
    };
    let (mut train, mut test) = (empty(), empty());
    for index in 0..digits.len() {
        let set = if index % 5 == 0 {
            &mut test
        } else {
            &mut train
        };
        set.push(digits.image(index), digits.labels[index]);
    }
    (train, test)
}
