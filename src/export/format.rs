//! The bytes of an export: CSV (RFC 4180, quoted by the `csv` crate) or NDJSON rows of the
//! grid's columns, the CSV header row, and NDJSON's closing error line.
//!
//! - **CSV**: a header row of the columns' display names (`Num`, `Name`, `State`, then the
//!   fields' names), then one record per issue; records end with CRLF; a field is quoted only
//!   when it must be (a comma, a quote, CR or LF), quotes doubled. No byte-order mark.
//! - **NDJSON**: one JSON object per issue and line (LF), `{"id", "num", "name", "state",
//!   "fields"}`, where `fields` maps each column's **field id** to its text, or `null` for an
//!   empty cell, in the columns' order. Field ids rather than names: names need not be unique
//!   within a project, ids are (the CSV header and the API give the names).
//!
//! Either way a cell is the API's canonical text (`42`, `-3.5`, `2023-05-01`, `true`), a
//! SELECT cell its option's label, an empty cell nothing (CSV) or `null` (NDJSON).

use bytes::Bytes;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use super::page::{Column, Row};
use super::ExportError;

/// What an export is written as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    #[default]
    Csv,
    Ndjson,
}

impl Format {
    /// The format named `text` (`csv` or `ndjson`).
    pub fn parse(text: &str) -> Option<Format> {
        match text {
            "csv" => Some(Format::Csv),
            "ndjson" => Some(Format::Ndjson),
            _ => None,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Csv => "text/csv; charset=utf-8",
            Format::Ndjson => "application/x-ndjson",
        }
    }

    /// The file name's extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Ndjson => "ndjson",
        }
    }

    /// What comes before the first row: CSV's header row (num, name, state and the columns'
    /// names); nothing for NDJSON.
    pub(super) fn header(self, columns: &[Column]) -> Result<Vec<u8>, ExportError> {
        match self {
            Format::Csv => {
                let mut writer = csv_writer(Vec::new());
                let fixed = ["Num", "Name", "State"].into_iter();
                writer
                    .write_record(fixed.chain(columns.iter().map(|c| c.name.as_str())))
                    .map_err(failed)?;
                writer.into_inner().map_err(|e| failed(e.into_error()))
            }
            Format::Ndjson => Ok(Vec::new()),
        }
    }

    /// Appends `rows` to `out`.
    pub(super) fn rows(
        self,
        columns: &[Column],
        rows: &[Row],
        out: &mut Vec<u8>,
    ) -> Result<(), ExportError> {
        match self {
            Format::Csv => {
                let mut writer = csv_writer(std::mem::take(out));
                for row in rows {
                    let values = row.values();
                    let cells = columns
                        .iter()
                        .map(|c| values.get(c.id.as_str()).and_then(|v| c.text(v)));
                    let num = row.num.to_string();
                    let fixed = [num.as_str(), &row.name, &row.state].into_iter();
                    writer
                        .write_record(fixed.chain(cells.map(|c| c.unwrap_or(""))))
                        .map_err(failed)?;
                }
                *out = writer.into_inner().map_err(|e| failed(e.into_error()))?;
            }
            Format::Ndjson => {
                for row in rows {
                    serde_json::to_writer(&mut *out, &Line { row, columns }).map_err(failed)?;
                    out.push(b'\n');
                }
            }
        }
        Ok(())
    }

    /// The line that ends an NDJSON export stopped by `error` (its last line, after the rows
    /// written before it): `{"errors": [{"message", "extensions": {"code", …}}]}`, the shape
    /// `/graphql` answers errors in, with the request id when there is one. `None` for CSV,
    /// which cannot say anything once its header is sent: a CSV export that fails is cut off
    /// instead (the HTTP transfer is aborted, the command exits non-zero).
    pub fn error_line(self, error: &ExportError, request_id: Option<&str>) -> Option<Bytes> {
        match self {
            Format::Csv => None,
            Format::Ndjson => {
                let mut line = serde_json::to_vec(&error.to_json(request_id)).ok()?;
                line.push(b'\n');
                Some(Bytes::from(line))
            }
        }
    }
}

/// A CSV writer appending to `out`: RFC 4180's CRLF, quotes only where needed.
fn csv_writer(out: Vec<u8>) -> csv::Writer<Vec<u8>> {
    csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(out)
}

/// An NDJSON line: the id, num, name and state, and its cells by field id.
struct Line<'a> {
    row: &'a Row,
    columns: &'a [Column],
}

impl Serialize for Line<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Fixed<'a> {
            id: &'a str,
            num: i64,
            name: &'a str,
            state: &'a str,
            fields: Cells<'a>,
        }
        let row = self.row;
        Fixed {
            id: &row.id,
            num: row.num,
            name: &row.name,
            state: &row.state,
            fields: Cells {
                row,
                columns: self.columns,
            },
        }
        .serialize(serializer)
    }
}

/// A row's cells as a JSON object in the columns' order.
struct Cells<'a> {
    row: &'a Row,
    columns: &'a [Column],
}

impl Serialize for Cells<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let values = self.row.values();
        let mut map = serializer.serialize_map(Some(self.columns.len()))?;
        for column in self.columns {
            let text = values.get(column.id.as_str()).and_then(|v| column.text(v));
            map.serialize_entry(&column.id, &text)?;
        }
        map.end()
    }
}

fn failed(cause: impl std::fmt::Display) -> ExportError {
    tracing::error!(%cause, "writing an export page failed");
    ExportError::internal()
}
