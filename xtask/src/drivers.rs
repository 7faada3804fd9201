//! The two Vulkan drivers the test suite runs on, told apart by their ICD JSON files: the
//! system's lavapipe (Mesa 22.3 on Debian 12) and Mesa 25's lavapipe from bookworm-backports,
//! unpacked under target/nxvk-drivers/ without being installed.
//!
//! The backports ICD JSON names a bare `libvulkan_lvp.so`, which the loader resolves to the
//! system's Mesa 22 library: tests would silently run the same driver twice. So we write our
//! own copy whose `library_path` is the absolute path of the unpacked library, and check with
//! vulkaninfo that the two files really load different drivers.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::backports;
use crate::os_release::OsRelease;
use crate::process;

const SYSTEM_ICD_DIRECTORY: &str = "/usr/share/vulkan/icd.d";
/// Written last: its presence means the unpacked driver is complete.
const SECOND_ICD_FILE: &str = "lvp_icd.json";
const SECOND_VERSION_FILE: &str = "package-version";
const PACKAGE_NAME: &str = "mesa-vulkan-drivers";

/// The ICD JSON files of the drivers this machine offers; `None` where one is absent.
#[derive(Debug)]
pub struct IcdFiles {
    /// The system lavapipe, e.g. /usr/share/vulkan/icd.d/lvp_icd.x86_64.json.
    pub system: Option<PathBuf>,
    /// Mesa 25 lavapipe, target/nxvk-drivers/mesa-backports/lvp_icd.json.
    pub second: Option<PathBuf>,
}

/// Where the drivers' files are, as already set up; changes nothing.
pub fn installed_icds(workspace_root: &Path) -> IcdFiles {
    let second = second_driver_directory(workspace_root).join(SECOND_ICD_FILE);
    IcdFiles {
        system: system_lavapipe_icd(),
        second: second.is_file().then_some(second),
    }
}

fn drivers_directory(workspace_root: &Path) -> PathBuf {
    workspace_root.join("target").join("nxvk-drivers")
}

fn second_driver_directory(workspace_root: &Path) -> PathBuf {
    drivers_directory(workspace_root).join("mesa-backports")
}

/// The system's lavapipe ICD for this machine's architecture (multiarch systems may also
/// carry, say, an i686 one).
fn system_lavapipe_icd() -> Option<PathBuf> {
    lavapipe_icd_in(Path::new(SYSTEM_ICD_DIRECTORY))
}

/// The lavapipe ICD file in a directory: this architecture's, else an unsuffixed one, else
/// another architecture's (which the loader will then report it cannot load).
fn lavapipe_icd_in(directory: &Path) -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(directory)
        .ok()?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| is_lavapipe_icd_name(path))
        .collect();
    candidates.sort_by_key(|path| {
        if is_for_this_architecture(path) {
            0
        } else if path.file_name().is_some_and(|name| name == "lvp_icd.json") {
            1
        } else {
            2
        }
    });
    candidates.into_iter().next()
}

fn is_lavapipe_icd_name(path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    name.starts_with("lvp_icd") && name.ends_with(".json")
}

fn is_for_this_architecture(path: &Path) -> bool {
    path.to_string_lossy()
        .ends_with(&format!(".{}.json", std::env::consts::ARCH))
}

/// Downloads and unpacks the second driver unless it is already there; on a machine that
/// cannot have it, says why and succeeds.
pub fn ensure_second_driver(workspace_root: &Path, os: &OsRelease) -> Result<()> {
    if let Some(reason) = second_driver_unavailable_reason(os) {
        println!("setup: {reason}");
        return Ok(());
    }
    let directory = second_driver_directory(workspace_root);
    let icd_file = directory.join(SECOND_ICD_FILE);
    let version_file = directory.join(SECOND_VERSION_FILE);
    if icd_file.is_file() {
        let version = std::fs::read_to_string(&version_file).unwrap_or_default();
        println!(
            "setup: second driver already set up: {PACKAGE_NAME} {}",
            version.trim()
        );
        return Ok(());
    }
    // A directory without the ICD file is an interrupted earlier run: start over.
    if directory.exists() {
        std::fs::remove_dir_all(&directory)?;
    }
    let version =
        backports::download_and_unpack(&drivers_directory(workspace_root).join("apt"), &directory)?;
    std::fs::write(&version_file, format!("{version}\n"))?;
    write_absolute_icd(&directory, &icd_file)?;
    println!(
        "setup: second driver set up: {PACKAGE_NAME} {version} -> {}",
        icd_file.display()
    );
    Ok(())
}

fn second_driver_unavailable_reason(os: &OsRelease) -> Option<String> {
    if !matches!(std::env::consts::ARCH, "x86_64" | "aarch64") {
        return Some(format!(
            "the second driver is unavailable on {}",
            std::env::consts::ARCH
        ));
    }
    if !os.is_debian() || os.codename() != backports::BASE_SUITE {
        return Some(format!(
            "the second driver comes from Debian {}-backports and is unavailable on {}",
            backports::BASE_SUITE,
            os.pretty_name()
        ));
    }
    None
}

/// Copies the unpacked lavapipe ICD JSON to `icd_file` with an absolute `library_path`.
fn write_absolute_icd(unpacked: &Path, icd_file: &Path) -> Result<()> {
    let shipped_directory = unpacked.join("usr/share/vulkan/icd.d");
    // Mesa 22 names the file lvp_icd.<arch>.json, Mesa 25 plain lvp_icd.json.
    let Some(shipped_icd) = lavapipe_icd_in(&shipped_directory) else {
        bail!("no lvp_icd*.json in {}", shipped_directory.display());
    };
    let mut icd: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&shipped_icd)?)
        .with_context(|| format!("{} is not JSON", shipped_icd.display()))?;
    let library_path = icd
        .pointer_mut("/ICD/library_path")
        .with_context(|| format!("{} has no ICD.library_path", shipped_icd.display()))?;
    let library_name = Path::new(library_path.as_str().unwrap_or_default())
        .file_name()
        .with_context(|| format!("{} has an empty library_path", shipped_icd.display()))?
        .to_owned();
    let library = find_file(unpacked, &library_name)?
        .with_context(|| format!("{} is not in the package", library_name.to_string_lossy()))?;
    *library_path =
        serde_json::Value::String(library.canonicalize()?.to_string_lossy().into_owned());
    std::fs::write(icd_file, serde_json::to_string_pretty(&icd)? + "\n")?;
    Ok(())
}

fn find_file(directory: &Path, name: &std::ffi::OsStr) -> Result<Option<PathBuf>> {
    for entry in std::fs::read_dir(directory)? {
        let path = entry?.path();
        if path.is_dir() && !path.is_symlink() {
            if let Some(found) = find_file(&path, name)? {
                return Ok(Some(found));
            }
        } else if path.file_name() == Some(name) {
            return Ok(Some(path));
        }
    }
    Ok(None)
}

/// Prints each driver's driverInfo as vulkaninfo reports it through that ICD file alone, and
/// fails if both files load the same driver.
pub fn verify(icds: &IcdFiles) -> Result<()> {
    if !process::program_exists("vulkaninfo") {
        println!("setup: vulkaninfo not found (package vulkan-tools): cannot verify the drivers");
        return Ok(());
    }
    let mut reports = Vec::new();
    for (label, icd_file) in [("system", &icds.system), ("second", &icds.second)] {
        let Some(icd_file) = icd_file else { continue };
        let driver_info = driver_info(icd_file)?;
        println!(
            "setup: {label} driver: {driver_info} ({})",
            icd_file.display()
        );
        reports.push(driver_info);
    }
    if let [system, second] = reports.as_slice()
        && system == second
    {
        bail!(
            "both ICD files load the same driver ({system}): the second driver's library_path is wrong"
        );
    }
    Ok(())
}

fn driver_info(icd_file: &Path) -> Result<String> {
    let summary =
        process::stdout_of(pin_driver(&mut Command::new("vulkaninfo"), icd_file).arg("--summary"))?;
    summary
        .lines()
        .find_map(|line| {
            Some(
                line.trim()
                    .strip_prefix("driverInfo")?
                    .trim_start()
                    .trim_start_matches('=')
                    .trim()
                    .to_owned(),
            )
        })
        .with_context(|| {
            format!(
                "vulkaninfo printed no driverInfo through {}",
                icd_file.display()
            )
        })
}

/// Makes the Vulkan loader see only the given driver. VK_DRIVER_FILES (loader 1.3.207+) takes
/// precedence over VK_ICD_FILENAMES and VK_ADD_DRIVER_FILES adds to it, so a caller's
/// environment could otherwise change which driver runs.
pub fn pin_driver<'command>(
    command: &'command mut Command,
    icd_file: &Path,
) -> &'command mut Command {
    command
        .env("VK_ICD_FILENAMES", icd_file)
        .env_remove("VK_DRIVER_FILES")
        .env_remove("VK_ADD_DRIVER_FILES")
}
