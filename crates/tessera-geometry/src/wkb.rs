//! ISO well-known binary, the stored form of a `GEOMETRY` value (as in DuckDB and in
//! GeoArrow's `geoarrow.wkb`): written little-endian with ISO type codes (Z +1000,
//! M +2000, ZM +3000), the empty point as NaN coordinates; read in either byte order,
//! EWKB's flag bits included.

use crate::model::{Coord, Dims, Geometry, KINDS, Kind, Line, Rings, Shape};
use crate::{COORDINATES_MAX, GeometryError, NESTING_MAX};

/// The WKB of `shape`.
pub fn encode(shape: &Shape) -> Vec<u8> {
    let mut out = Vec::new();
    write_geometry(&mut out, &shape.geometry, shape.dims);
    out
}

/// Appends the WKB of `shape` to `out` (for building a column without a copy).
pub fn encode_into(out: &mut Vec<u8>, shape: &Shape) {
    write_geometry(out, &shape.geometry, shape.dims);
}

fn header(out: &mut Vec<u8>, kind: Kind, dims: Dims) {
    out.push(1);
    let code = kind.wkb_code() + 1000 * u32::from(dims.z) + 2000 * u32::from(dims.m);
    out.extend_from_slice(&code.to_le_bytes());
}

fn count(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n as u32).to_le_bytes());
}

fn coord(out: &mut Vec<u8>, c: &Coord, dims: Dims) {
    for v in c.ordinates(dims) {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn line(out: &mut Vec<u8>, l: &Line, dims: Dims) {
    count(out, l.len());
    l.iter().for_each(|c| coord(out, c, dims));
}

fn rings(out: &mut Vec<u8>, r: &Rings, dims: Dims) {
    count(out, r.len());
    r.iter().for_each(|l| line(out, l, dims));
}

fn write_geometry(out: &mut Vec<u8>, geometry: &Geometry, dims: Dims) {
    header(out, geometry.kind(), dims);
    let nan = Coord {
        x: f64::NAN,
        y: f64::NAN,
        z: f64::NAN,
        m: f64::NAN,
    };
    match geometry {
        Geometry::Point(p) => coord(out, p.as_ref().unwrap_or(&nan), dims),
        Geometry::LineString(l) => line(out, l, dims),
        Geometry::Polygon(r) => rings(out, r, dims),
        Geometry::MultiPoint(points) => {
            count(out, points.len());
            for p in points {
                write_geometry(out, &Geometry::Point(*p), dims);
            }
        }
        Geometry::MultiLineString(lines) => {
            count(out, lines.len());
            for l in lines {
                header(out, Kind::LineString, dims);
                line(out, l, dims);
            }
        }
        Geometry::MultiPolygon(polygons) => {
            count(out, polygons.len());
            for r in polygons {
                header(out, Kind::Polygon, dims);
                rings(out, r, dims);
            }
        }
        Geometry::GeometryCollection(items) => {
            count(out, items.len());
            items.iter().for_each(|g| write_geometry(out, g, dims));
        }
    }
}

/// Reads one geometry; the bytes must hold exactly one.
pub fn decode(bytes: &[u8]) -> Result<Shape, GeometryError> {
    let mut reader = Reader {
        bytes,
        at: 0,
        little: true,
        coordinates: 0,
    };
    let (kind, dims) = reader.header()?;
    let geometry = reader.body(kind, dims, 0)?;
    if reader.at != bytes.len() {
        return Err(reader.error(format!(
            "{} bytes after the geometry",
            bytes.len() - reader.at
        )));
    }
    Ok(Shape { dims, geometry })
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    little: bool,
    coordinates: usize,
}

/// EWKB's flag bits in a type code.
const EWKB_Z: u32 = 0x8000_0000;
const EWKB_M: u32 = 0x4000_0000;
const EWKB_SRID: u32 = 0x2000_0000;

impl Reader<'_> {
    fn error(&self, reason: String) -> GeometryError {
        GeometryError::Wkb {
            offset: self.at,
            reason,
        }
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], GeometryError> {
        let slice = self
            .bytes
            .get(self.at..self.at + N)
            .ok_or_else(|| self.error(format!("expected {N} more bytes, the input ends first")))?;
        self.at += N;
        Ok(slice.try_into().unwrap_or([0; N]))
    }

    fn u32(&mut self) -> Result<u32, GeometryError> {
        let b = self.take::<4>()?;
        Ok(if self.little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    }

    fn f64(&mut self) -> Result<f64, GeometryError> {
        let b = self.take::<8>()?;
        Ok(if self.little {
            f64::from_le_bytes(b)
        } else {
            f64::from_be_bytes(b)
        })
    }

    /// A count of items each at least `item_bytes` long: more than the rest of the
    /// input could hold is an error before anything is allocated.
    fn count(&mut self, item_bytes: usize) -> Result<usize, GeometryError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(item_bytes) > self.bytes.len() - self.at {
            return Err(self.error(format!("a count of {n} items exceeds the input")));
        }
        Ok(n)
    }

    fn header(&mut self) -> Result<(Kind, Dims), GeometryError> {
        let start = self.at;
        self.little = match self.take::<1>()?[0] {
            0 => false,
            1 => true,
            other => {
                self.at = start;
                return Err(self.error(format!("expected a byte order of 0 or 1, got {other}")));
            }
        };
        let code = self.u32()?;
        if code & EWKB_SRID != 0 {
            self.u32()?;
        }
        let iso = code & 0xffff;
        let dims = Dims {
            z: code & EWKB_Z != 0 || matches!(iso / 1000, 1 | 3),
            m: code & EWKB_M != 0 || matches!(iso / 1000, 2 | 3),
        };
        match KINDS.get(((iso % 1000) as usize).wrapping_sub(1)) {
            Some(kind) => Ok((*kind, dims)),
            None => {
                self.at = start;
                Err(self.error(format!("unknown geometry type code {code}")))
            }
        }
    }

    fn coord(&mut self, dims: Dims) -> Result<Coord, GeometryError> {
        self.coordinates += 1;
        if self.coordinates > COORDINATES_MAX {
            return Err(self.error(format!("more than {COORDINATES_MAX} coordinates")));
        }
        let x = self.f64()?;
        let y = self.f64()?;
        let z = if dims.z { self.f64()? } else { 0.0 };
        let m = if dims.m { self.f64()? } else { 0.0 };
        Ok(Coord { x, y, z, m })
    }

    /// A point's coordinate; NaN in x and y is the empty point.
    fn point(&mut self, dims: Dims) -> Result<Option<Coord>, GeometryError> {
        let c = self.coord(dims)?;
        Ok((!(c.x.is_nan() && c.y.is_nan())).then_some(c))
    }

    fn line(&mut self, dims: Dims) -> Result<Line, GeometryError> {
        let n = self.count(8 * dims.count())?;
        (0..n).map(|_| self.coord(dims)).collect()
    }

    fn rings(&mut self, dims: Dims) -> Result<Rings, GeometryError> {
        let n = self.count(4)?;
        (0..n).map(|_| self.line(dims)).collect()
    }

    /// A nested geometry's header: of `kind` when given, with the parent's dimensions.
    fn child(&mut self, kind: Option<Kind>, dims: Dims) -> Result<Kind, GeometryError> {
        let start = self.at;
        let (found, inner) = self.header()?;
        if inner != dims || kind.is_some_and(|k| k != found) {
            self.at = start;
            return Err(self.error("a nested geometry of another type or dimensions".into()));
        }
        Ok(found)
    }

    fn body(&mut self, kind: Kind, dims: Dims, depth: usize) -> Result<Geometry, GeometryError> {
        if depth > NESTING_MAX {
            return Err(self.error(format!("collections nested deeper than {NESTING_MAX}")));
        }
        Ok(match kind {
            Kind::Point => Geometry::Point(self.point(dims)?),
            Kind::LineString => Geometry::LineString(self.line(dims)?),
            Kind::Polygon => Geometry::Polygon(self.rings(dims)?),
            Kind::MultiPoint => {
                let n = self.count(5)?;
                let mut points = Vec::with_capacity(n);
                for _ in 0..n {
                    self.child(Some(Kind::Point), dims)?;
                    points.push(self.point(dims)?);
                }
                Geometry::MultiPoint(points)
            }
            Kind::MultiLineString => {
                let n = self.count(5)?;
                let mut lines = Vec::with_capacity(n);
                for _ in 0..n {
                    self.child(Some(Kind::LineString), dims)?;
                    lines.push(self.line(dims)?);
                }
                Geometry::MultiLineString(lines)
            }
            Kind::MultiPolygon => {
                let n = self.count(5)?;
                let mut polygons = Vec::with_capacity(n);
                for _ in 0..n {
                    self.child(Some(Kind::Polygon), dims)?;
                    polygons.push(self.rings(dims)?);
                }
                Geometry::MultiPolygon(polygons)
            }
            Kind::GeometryCollection => {
                let n = self.count(5)?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    let kind = self.child(None, dims)?;
                    items.push(self.body(kind, dims, depth + 1)?);
                }
                Geometry::GeometryCollection(items)
            }
        })
    }
}
