//! JSON export: the whole [`BenchReport`], pretty-printed, every run included.

use anyhow::Result;

use super::{BenchReport, Exporter};

pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn serialize(&self, report: &BenchReport) -> Result<Vec<u8>> {
        let mut out = serde_json::to_vec_pretty(report)?;
        out.push(b'\n');
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_pretty_with_a_final_newline() {
        let r = super::super::fixture::report();
        let bytes = JsonExporter.serialize(&r).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert!(
            text.starts_with("{\n  \"schema\": 1,\n  \"kind\": \"bench\",\n"),
            "{text}"
        );
        assert!(text.ends_with("\n}\n"));
        // Byte for byte what the exporter wrote before it was split out.
        assert_eq!(text, serde_json::to_string_pretty(&r).unwrap() + "\n");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["workloads"][0]["name"], "big|input,x");
        assert_eq!(v["workloads"][0]["samples"].as_array().unwrap().len(), 4);
        assert_eq!(v["options"]["max_time"], 3.0);
    }
}
