//! CSV export: one row per measured run (warm-up runs are not recorded), written with the
//! `csv` crate (fields quoted only when they need it).

use super::BenchReport;
use crate::bench::comparison::Side;
use crate::render::Render;

pub(crate) struct CsvExporter;

const HEADER: [&str; 11] = [
    "workload",
    "side",
    "pair",
    "seq",
    "wall_secs",
    "user_secs",
    "sys_secs",
    "max_rss_bytes",
    "status",
    "pad_bytes",
    "outlier",
];

impl Render<BenchReport> for CsvExporter {
    fn render(&self, report: &BenchReport) -> String {
        // Writing into memory cannot fail, and every field is a `String`: UTF-8.
        rows(report)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }
}

fn rows(report: &BenchReport) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(HEADER)?;
    for wl in &report.workloads {
        for run in &wl.comparison.samples {
            let status = match (run.status.code, run.status.signal) {
                (Some(c), _) => c.to_string(),
                (None, Some(sig)) => format!("signal {sig}"),
                _ => String::new(),
            };
            w.write_record([
                wl.name.clone(),
                match run.side {
                    Side::A => "A",
                    Side::B => "B",
                }
                .to_string(),
                run.pair.to_string(),
                run.seq.to_string(),
                format!("{:.9}", run.wall_secs),
                format!("{:.6}", run.user_secs),
                format!("{:.6}", run.sys_secs),
                run.max_rss_bytes.to_string(),
                status,
                run.pad_bytes.to_string(),
                run.outlier.to_string(),
            ])?;
        }
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_rows() {
        let r = super::super::fixture::report();
        let text = CsvExporter.render(&r);
        assert_eq!(
            text,
            "\
workload,side,pair,seq,wall_secs,user_secs,sys_secs,max_rss_bytes,status,pad_bytes,outlier
\"big|input,x\",A,0,0,0.041200000,0.037080,0.001000,2097152,0,64,false
\"big|input,x\",B,0,1,0.037000000,0.033300,0.001000,2097152,0,64,false
\"big|input,x\",B,1,2,0.050000000,0.045000,0.001000,2097152,signal 9,64,true
\"big|input,x\",A,1,3,0.040000000,0.036000,0.001000,2097152,0,64,true
"
        );
    }

    #[test]
    fn quotes_only_what_needs_it() {
        let mut r = super::super::fixture::report();
        r.workloads[0].name = "say \"hi\"\nplain".into();
        let text = CsvExporter.render(&r);
        assert!(
            text.contains("\n\"say \"\"hi\"\"\nplain\",A,0,0,"),
            "{text}"
        );
    }
}
