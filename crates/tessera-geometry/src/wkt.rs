//! Well-known text: parsed (keywords in any case, `POINTZ` or `POINT Z`, an optional
//! `SRID=n;` prefix) and printed exactly as DuckDB prints it (`POINT Z (1 2 3)`,
//! `MULTIPOINT (1 2, EMPTY)`, coordinates by [`crate::number::push_wkt`]).

use crate::model::{Coord, Dims, Geometry, KINDS, Kind, Line, Rings, Shape};
use crate::number::push_wkt;
use crate::{COORDINATES_MAX, GeometryError, NESTING_MAX};

/// Parses one geometry; the whole text must be consumed.
pub fn parse(text: &str) -> Result<Shape, GeometryError> {
    let mut parser = Parser {
        text: text.as_bytes(),
        at: 0,
        coordinates: 0,
    };
    parser.skip_srid();
    let (kind, dims) = parser.tag()?;
    let geometry = parser.body(kind, dims, 0)?;
    parser.skip_space();
    if parser.at < parser.text.len() {
        return Err(parser.error(format!("Expected end of input but got {}", parser.found())));
    }
    Ok(Shape { dims, geometry })
}

/// The WKT of `shape`, as DuckDB prints it.
pub fn format(shape: &Shape) -> String {
    let mut out = String::new();
    write_tagged(&mut out, &shape.geometry, shape.dims);
    out
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
    coordinates: usize,
}

impl Parser<'_> {
    fn error(&self, reason: String) -> GeometryError {
        GeometryError::Wkt {
            offset: self.at,
            reason,
        }
    }

    fn found(&self) -> String {
        match self.text.get(self.at) {
            Some(&b) if b.is_ascii_graphic() => format!("'{}'", b as char),
            Some(&b) => format!("byte 0x{b:02x}"),
            None => "end of input".to_string(),
        }
    }

    fn skip_space(&mut self) {
        while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    /// Skips PostGIS's `SRID=4326;` (DuckDB reads and drops it).
    fn skip_srid(&mut self) {
        self.skip_space();
        let rest = &self.text[self.at..];
        if rest.len() >= 5
            && rest[..5].eq_ignore_ascii_case(b"SRID=")
            && let Some(semi) = rest.iter().position(|b| *b == b';')
        {
            self.at += semi + 1;
        }
    }

    fn word(&mut self) -> &[u8] {
        self.skip_space();
        let start = self.at;
        while self.text.get(self.at).is_some_and(u8::is_ascii_alphabetic) {
            self.at += 1;
        }
        &self.text[start..self.at]
    }

    fn peek_word(&mut self, expected: &str) -> bool {
        let start = self.at;
        let matches = self.word().eq_ignore_ascii_case(expected.as_bytes());
        if !matches {
            self.at = start;
        }
        matches
    }

    /// A geometry keyword with its dimensions (`POINT`, `POINTZ`, `POINT ZM`).
    fn tag(&mut self) -> Result<(Kind, Dims), GeometryError> {
        self.skip_space();
        let start = self.at;
        let word = self.word().to_ascii_uppercase();
        let split = KINDS.iter().find_map(|kind| {
            let suffix = word.strip_prefix(kind.wkt_name().as_bytes())?;
            Some((*kind, dims_of(suffix)?))
        });
        let Some((kind, mut dims)) = split else {
            self.at = start;
            return Err(self.error("Unknown geometry type".to_string()));
        };
        if dims == Dims::default() {
            let before = self.at;
            dims = match dims_of(&self.word().to_ascii_uppercase()) {
                Some(d) if d != Dims::default() => d,
                _ => {
                    self.at = before;
                    Dims::default()
                }
            };
        }
        Ok((kind, dims))
    }

    fn expect(&mut self, byte: u8) -> Result<(), GeometryError> {
        self.skip_space();
        if self.text.get(self.at) == Some(&byte) {
            self.at += 1;
            return Ok(());
        }
        Err(self.error(format!(
            "Expected '{}' but got {}",
            byte as char,
            self.found()
        )))
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        let hit = self.text.get(self.at) == Some(&byte);
        self.at += usize::from(hit);
        hit
    }

    /// `( item, item, ... )` with `item` read by `f`.
    fn list<T>(
        &mut self,
        mut f: impl FnMut(&mut Self) -> Result<T, GeometryError>,
    ) -> Result<Vec<T>, GeometryError> {
        self.expect(b'(')?;
        let mut items = vec![f(self)?];
        while self.eat(b',') {
            items.push(f(self)?);
        }
        self.expect(b')')?;
        Ok(items)
    }

    /// `EMPTY` (then `None`) or what `f` reads.
    fn or_empty<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, GeometryError>,
    ) -> Result<Option<T>, GeometryError> {
        match self.peek_word("EMPTY") {
            true => Ok(None),
            false => f(self).map(Some),
        }
    }

    fn number(&mut self) -> Result<f64, GeometryError> {
        self.skip_space();
        let start = self.at;
        let numeric = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.');
        while self.text.get(self.at).is_some_and(numeric) {
            self.at += 1;
        }
        let token = std::str::from_utf8(&self.text[start..self.at]).unwrap_or_default();
        token.parse::<f64>().map_err(|_| {
            self.at = start;
            self.error("Expected number".to_string())
        })
    }

    fn coord(&mut self, dims: Dims) -> Result<Coord, GeometryError> {
        self.coordinates += 1;
        if self.coordinates > COORDINATES_MAX {
            return Err(GeometryError::Limit {
                offset: self.at,
                reason: format!("more than {COORDINATES_MAX} coordinates"),
            });
        }
        let x = self.number()?;
        let y = self.number()?;
        let z = if dims.z { self.number()? } else { 0.0 };
        let m = if dims.m { self.number()? } else { 0.0 };
        Ok(Coord { x, y, z, m })
    }

    fn line(&mut self, dims: Dims) -> Result<Line, GeometryError> {
        Ok(self
            .or_empty(|p| p.list(|p| p.coord(dims)))?
            .unwrap_or_default())
    }

    fn rings(&mut self, dims: Dims) -> Result<Rings, GeometryError> {
        Ok(self
            .or_empty(|p| p.list(|p| p.line(dims)))?
            .unwrap_or_default())
    }

    /// A point of a multipoint: `EMPTY`, `(x y)` or `x y`.
    fn multi_point_item(&mut self, dims: Dims) -> Result<Option<Coord>, GeometryError> {
        self.or_empty(|p| match p.eat(b'(') {
            true => {
                let c = p.coord(dims)?;
                p.expect(b')')?;
                Ok(c)
            }
            false => p.coord(dims),
        })
    }

    fn body(&mut self, kind: Kind, dims: Dims, depth: usize) -> Result<Geometry, GeometryError> {
        if depth > NESTING_MAX {
            return Err(GeometryError::Limit {
                offset: self.at,
                reason: format!("collections nested deeper than {NESTING_MAX}"),
            });
        }
        if self.peek_word("EMPTY") {
            return Ok(empty(kind));
        }
        Ok(match kind {
            Kind::Point => {
                self.expect(b'(')?;
                let c = self.coord(dims)?;
                self.expect(b')')?;
                Geometry::Point(Some(c))
            }
            Kind::LineString => Geometry::LineString(self.list(|p| p.coord(dims))?),
            Kind::Polygon => Geometry::Polygon(self.list(|p| p.line(dims))?),
            Kind::MultiPoint => Geometry::MultiPoint(self.list(|p| p.multi_point_item(dims))?),
            Kind::MultiLineString => Geometry::MultiLineString(self.list(|p| p.line(dims))?),
            Kind::MultiPolygon => Geometry::MultiPolygon(self.list(|p| p.rings(dims))?),
            Kind::GeometryCollection => Geometry::GeometryCollection(self.list(|p| {
                let (kind, inner) = p.tag()?;
                if inner != dims {
                    return Err(p.error("Geometry has inconsistent Z/M dimensions".to_string()));
                }
                p.body(kind, dims, depth + 1)
            })?),
        })
    }
}

/// The dimensions a keyword suffix names (`""`, `Z`, `M`, `ZM`), if it names any.
fn dims_of(suffix: &[u8]) -> Option<Dims> {
    match suffix {
        b"" => Some(Dims::default()),
        b"Z" => Some(Dims { z: true, m: false }),
        b"M" => Some(Dims { z: false, m: true }),
        b"ZM" => Some(Dims { z: true, m: true }),
        _ => None,
    }
}

/// The empty geometry of a kind.
pub fn empty(kind: Kind) -> Geometry {
    match kind {
        Kind::Point => Geometry::Point(None),
        Kind::LineString => Geometry::LineString(Vec::new()),
        Kind::Polygon => Geometry::Polygon(Vec::new()),
        Kind::MultiPoint => Geometry::MultiPoint(Vec::new()),
        Kind::MultiLineString => Geometry::MultiLineString(Vec::new()),
        Kind::MultiPolygon => Geometry::MultiPolygon(Vec::new()),
        Kind::GeometryCollection => Geometry::GeometryCollection(Vec::new()),
    }
}

fn write_tagged(out: &mut String, geometry: &Geometry, dims: Dims) {
    out.push_str(geometry.kind().wkt_name());
    out.push_str(dims.wkt_suffix());
    out.push(' ');
    write_body(out, geometry, dims);
}

/// `EMPTY` for an empty item, else `( item, item )` with each item written by `f`.
fn write_list<T>(out: &mut String, items: &[T], mut f: impl FnMut(&mut String, &T)) {
    if items.is_empty() {
        out.push_str("EMPTY");
        return;
    }
    out.push('(');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        f(out, item);
    }
    out.push(')');
}

fn write_coord(out: &mut String, coord: &Coord, dims: Dims) {
    for (i, ordinate) in coord.ordinates(dims).enumerate() {
        if i > 0 {
            out.push(' ');
        }
        push_wkt(out, ordinate);
    }
}

fn write_line(out: &mut String, line: &Line, dims: Dims) {
    write_list(out, line, |out, c| write_coord(out, c, dims));
}

fn write_rings(out: &mut String, rings: &Rings, dims: Dims) {
    write_list(out, rings, |out, l| write_line(out, l, dims));
}

fn write_body(out: &mut String, geometry: &Geometry, dims: Dims) {
    match geometry {
        Geometry::Point(None) => out.push_str("EMPTY"),
        Geometry::Point(Some(c)) => {
            out.push('(');
            write_coord(out, c, dims);
            out.push(')');
        }
        Geometry::LineString(line) => write_line(out, line, dims),
        Geometry::Polygon(rings) => write_rings(out, rings, dims),
        Geometry::MultiPoint(points) => write_list(out, points, |out, p| match p {
            Some(c) => write_coord(out, c, dims),
            None => out.push_str("EMPTY"),
        }),
        Geometry::MultiLineString(lines) => {
            write_list(out, lines, |out, l| write_line(out, l, dims))
        }
        Geometry::MultiPolygon(polygons) => {
            write_list(out, polygons, |out, r| write_rings(out, r, dims))
        }
        Geometry::GeometryCollection(items) => {
            write_list(out, items, |out, g| write_tagged(out, g, dims))
        }
    }
}
