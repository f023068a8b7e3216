//! S3 connection settings resolved the way the AWS CLI resolves them.
//!
//! Precedence, highest first: explicit overrides (command-line flags), the standard
//! `AWS_*` environment variables, the selected profile in the shared credentials file,
//! the selected profile in the shared config file, built-in defaults. Both retrieval
//! backends (the `object_store` client and Tessera's own) start from one [`S3Config`], so
//! a user configures S3 once.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::error::BlobError;

/// Region used when nothing configures one; S3-compatible servers such as MinIO accept it.
pub const DEFAULT_REGION: &str = "us-east-1";

/// Access keys for request signing.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The access key id (not secret; shown in errors to help diagnose).
    pub access_key_id: String,
    /// The secret key; never printed.
    pub secret_access_key: String,
    /// Optional session token of temporary credentials; never printed.
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// How bucket names go into request URLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addressing {
    /// `http://endpoint/bucket/key`: what MinIO and most S3-compatible servers expect.
    Path,
    /// `http://bucket.endpoint/key`: what AWS prefers.
    VirtualHosted,
}

/// Resolved settings for talking to one S3-compatible service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Config {
    /// Endpoint URL such as `http://127.0.0.1:9000`; `None` means AWS's regional endpoint.
    pub endpoint: Option<String>,
    /// Signing region.
    pub region: String,
    /// Access keys; `None` sends unsigned (anonymous) requests.
    pub credentials: Option<Credentials>,
    /// Bucket addressing style.
    pub addressing: Addressing,
    /// Which profile the settings came from, for error messages.
    pub profile: String,
}

/// Settings given explicitly (for example on the command line); they win over everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct S3Overrides {
    /// `--endpoint-url`.
    pub endpoint: Option<String>,
    /// `--region`.
    pub region: Option<String>,
    /// `--profile`.
    pub profile: Option<String>,
}

impl S3Config {
    /// Resolves settings from the process environment and the shared AWS files.
    pub fn from_environment(overrides: &S3Overrides) -> Result<Self, BlobError> {
        Self::resolve(overrides, &|name| std::env::var(name).ok())
    }

    /// Resolves settings with `env` standing in for the process environment (for tests).
    pub fn resolve(
        overrides: &S3Overrides,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, BlobError> {
        let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let explicit_profile = overrides
            .profile
            .clone()
            .or_else(|| env("AWS_PROFILE"))
            .or_else(|| env("AWS_DEFAULT_PROFILE"));
        let profile = explicit_profile
            .clone()
            .unwrap_or_else(|| "default".to_string());

        let home = env("HOME").map(PathBuf::from);
        let credentials_path = env("AWS_SHARED_CREDENTIALS_FILE")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws/credentials")));
        let config_path = env("AWS_CONFIG_FILE")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws/config")));

        let from_credentials = read_profile(credentials_path.as_ref(), &profile, false)?;
        let from_config = read_profile(config_path.as_ref(), &profile, true)?;
        if explicit_profile.is_some() && from_credentials.is_none() && from_config.is_none() {
            return Err(BlobError::Config(format!(
                "the AWS profile '{profile}' was not found in {} or {}",
                display_path(credentials_path.as_ref()),
                display_path(config_path.as_ref()),
            )));
        }
        let profile_value = |key: &str| {
            from_credentials
                .as_ref()
                .and_then(|p| p.get(key).cloned())
                .or_else(|| from_config.as_ref().and_then(|p| p.get(key).cloned()))
        };

        let endpoint = overrides
            .endpoint
            .clone()
            .or_else(|| env("AWS_ENDPOINT_URL_S3"))
            .or_else(|| env("AWS_ENDPOINT_URL"))
            .or_else(|| profile_value("s3.endpoint_url"))
            .or_else(|| profile_value("endpoint_url"))
            .map(|e| e.trim_end_matches('/').to_string());
        if let Some(endpoint) = &endpoint
            && !(endpoint.starts_with("http://") || endpoint.starts_with("https://"))
        {
            return Err(BlobError::Config(format!(
                "the S3 endpoint '{endpoint}' must start with http:// or https://"
            )));
        }

        let region = overrides
            .region
            .clone()
            .or_else(|| env("AWS_REGION"))
            .or_else(|| env("AWS_DEFAULT_REGION"))
            .or_else(|| profile_value("region"))
            .unwrap_or_else(|| DEFAULT_REGION.to_string());

        let access_key = env("AWS_ACCESS_KEY_ID");
        let secret_key = env("AWS_SECRET_ACCESS_KEY");
        let credentials = match (access_key, secret_key) {
            (Some(access_key_id), Some(secret_access_key)) => Some(Credentials {
                access_key_id,
                secret_access_key,
                session_token: env("AWS_SESSION_TOKEN"),
            }),
            (Some(_), None) | (None, Some(_)) => {
                return Err(BlobError::Config(
                    "only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY is set; set both"
                        .to_string(),
                ));
            }
            (None, None) => match (
                profile_value("aws_access_key_id"),
                profile_value("aws_secret_access_key"),
            ) {
                (Some(access_key_id), Some(secret_access_key)) => Some(Credentials {
                    access_key_id,
                    secret_access_key,
                    session_token: profile_value("aws_session_token"),
                }),
                _ => None,
            },
        };

        let addressing = match env("AWS_S3_ADDRESSING_STYLE")
            .or_else(|| profile_value("s3.addressing_style"))
            .as_deref()
        {
            Some("path") => Addressing::Path,
            Some("virtual") => Addressing::VirtualHosted,
            Some(other) if other != "auto" => {
                return Err(BlobError::Config(format!(
                    "unknown S3 addressing style '{other}' (expected path, virtual or auto)"
                )));
            }
            _ if endpoint.is_some() => Addressing::Path,
            _ => Addressing::VirtualHosted,
        };

        Ok(S3Config {
            endpoint,
            region,
            credentials,
            addressing,
            profile,
        })
    }

    /// True when requests go over plain HTTP (a loopback or in-VPC endpoint).
    pub fn is_plain_http(&self) -> bool {
        self.endpoint
            .as_deref()
            .is_some_and(|e| e.starts_with("http://"))
    }

    /// A short description of the endpoint for messages: never includes secrets.
    pub fn endpoint_description(&self) -> String {
        match &self.endpoint {
            Some(e) => e.clone(),
            None => format!("AWS S3 ({})", self.region),
        }
    }
}

fn display_path(path: Option<&PathBuf>) -> String {
    path.map(|p| p.display().to_string())
        .unwrap_or_else(|| "(no home directory)".to_string())
}

/// Reads one profile's keys from an AWS INI file; nested `s3 =` blocks become `s3.key`.
///
/// A missing file is not an error (most machines have none); an unreadable one is.
fn read_profile(
    path: Option<&PathBuf>,
    profile: &str,
    is_config_file: bool,
) -> Result<Option<HashMap<String, String>>, BlobError> {
    let Some(path) = path else { return Ok(None) };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(BlobError::Config(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    };
    // The config file names profiles `[profile x]` except for `[default]`.
    let wanted = if is_config_file && profile != "default" {
        format!("profile {profile}")
    } else {
        profile.to_string()
    };
    let mut found: Option<HashMap<String, String>> = None;
    let mut in_section = false;
    let mut nested: Option<String> = None;
    for raw in text.lines() {
        let line = raw.split(['#', ';']).next().unwrap_or("");
        if line.trim().is_empty() {
            continue;
        }
        let indented = line.starts_with([' ', '\t']);
        let line = line.trim();
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_section = name.trim() == wanted;
            nested = None;
            if in_section {
                found.get_or_insert_with(HashMap::new);
            }
            continue;
        }
        if !in_section {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let (key, value) = (key.trim().to_lowercase(), value.trim().to_string());
        let section = found.get_or_insert_with(HashMap::new);
        if indented && let Some(parent) = &nested {
            section.insert(format!("{parent}.{key}"), value);
        } else if value.is_empty() {
            nested = Some(key);
        } else {
            nested = None;
            section.insert(key, value);
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, String)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn environment_variables_configure_everything() {
        let env = env_of(&[
            ("HOME", "/nonexistent".into()),
            ("AWS_ACCESS_KEY_ID", "AKID".into()),
            ("AWS_SECRET_ACCESS_KEY", "SECRET".into()),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9000/".into()),
            ("AWS_REGION", "eu-central-1".into()),
        ]);
        let cfg = S3Config::resolve(&S3Overrides::default(), &env).unwrap();
        assert_eq!(cfg.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!(cfg.region, "eu-central-1");
        assert_eq!(cfg.addressing, Addressing::Path);
        assert!(cfg.is_plain_http());
        let creds = cfg.credentials.unwrap();
        assert_eq!(creds.access_key_id, "AKID");
        assert!(!format!("{creds:?}").contains("SECRET"));
    }

    #[test]
    fn overrides_win_and_defaults_fill_in() {
        let env = env_of(&[
            ("HOME", "/nonexistent".into()),
            ("AWS_ENDPOINT_URL", "http://a:1".into()),
        ]);
        let overrides = S3Overrides {
            endpoint: Some("http://b:2".into()),
            ..Default::default()
        };
        let cfg = S3Config::resolve(&overrides, &env).unwrap();
        assert_eq!(cfg.endpoint.as_deref(), Some("http://b:2"));
        assert_eq!(cfg.region, DEFAULT_REGION);
        assert!(cfg.credentials.is_none());
        let aws = S3Config::resolve(&S3Overrides::default(), &env_of(&[])).unwrap();
        assert_eq!(aws.addressing, Addressing::VirtualHosted);
    }

    #[test]
    fn profiles_come_from_shared_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".aws")).unwrap();
        std::fs::write(
            dir.path().join(".aws/credentials"),
            "[default]\naws_access_key_id = D\naws_secret_access_key = DS\n\n[minio]\naws_access_key_id = M # comment\naws_secret_access_key = MS\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join(".aws/config"),
            "[profile minio]\nregion = local-1\ns3 =\n  addressing_style = virtual\n  endpoint_url = http://10.0.0.1:9000\n",
        )
        .unwrap();
        let home = dir.path().display().to_string();
        let env = env_of(&[("HOME", home.clone()), ("AWS_PROFILE", "minio".into())]);
        let cfg = S3Config::resolve(&S3Overrides::default(), &env).unwrap();
        assert_eq!(cfg.credentials.as_ref().unwrap().access_key_id, "M");
        assert_eq!(cfg.region, "local-1");
        assert_eq!(cfg.endpoint.as_deref(), Some("http://10.0.0.1:9000"));
        assert_eq!(cfg.addressing, Addressing::VirtualHosted);

        let default =
            S3Config::resolve(&S3Overrides::default(), &env_of(&[("HOME", home.clone())])).unwrap();
        assert_eq!(default.credentials.unwrap().access_key_id, "D");

        let missing = S3Overrides {
            profile: Some("nope".into()),
            ..Default::default()
        };
        let err = S3Config::resolve(&missing, &env_of(&[("HOME", home)])).unwrap_err();
        assert!(
            err.to_string().contains("profile 'nope' was not found"),
            "{err}"
        );
    }

    #[test]
    fn half_credentials_and_bad_endpoints_are_errors() {
        let err = S3Config::resolve(
            &S3Overrides::default(),
            &env_of(&[("AWS_ACCESS_KEY_ID", "A".into())]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("set both"));
        let err = S3Config::resolve(
            &S3Overrides::default(),
            &env_of(&[("AWS_ENDPOINT_URL", "localhost:9000".into())]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("http://"));
    }
}
