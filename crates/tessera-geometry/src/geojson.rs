//! GeoJSON geometry objects (RFC 7946, "The GeoJSON Format"), read and written as DuckDB
//! reads and writes them: positions of 2 numbers, or 3 (Z; a geometry with any Z
//! position is Z throughout, missing elevations 0); numbers past the third ignored;
//! M dropped on output; members other than `type`, `coordinates` and `geometries`
//! (`bbox`, `crs`, ...) ignored; of duplicate members the first counts.

use crate::json::{self, Node, Value};
use crate::model::{Coord, Dims, Geometry, KINDS, Kind, Line, Rings, Shape};
use crate::number::push_json;
use crate::{COORDINATES_MAX, GeometryError, NESTING_MAX};

/// Parses a GeoJSON geometry object from JSON text.
pub fn parse(text: &str) -> Result<Shape, GeometryError> {
    from_node(&json::parse(text)?)
}

/// Parses a JSON document holding a geometry as DuckDB's cast from `JSON` reads it: a
/// GeoJSON object, or a string of well-known text.
pub fn parse_document(text: &str) -> Result<Shape, GeometryError> {
    let node = json::parse(text)?;
    match &node.value {
        Value::String(wkt) => crate::wkt::parse(wkt),
        Value::Object(_) => from_node(&node),
        _ => Err(invalid(
            &node,
            "a geometry must be a GeoJSON object or WKT text",
        )),
    }
}

/// The GeoJSON of `shape`, as DuckDB writes it.
pub fn format(shape: &Shape) -> String {
    let mut out = String::new();
    write_geometry(&mut out, &shape.geometry, shape.dims.z);
    out
}

fn invalid(node: &Node, reason: &str) -> GeometryError {
    GeometryError::GeoJson {
        offset: node.offset,
        reason: reason.to_string(),
    }
}

fn from_node(node: &Node) -> Result<Shape, GeometryError> {
    let mut reader = Reader {
        z: false,
        coordinates: 0,
    };
    let geometry = reader.geometry(node, 0)?;
    Ok(Shape {
        dims: Dims {
            z: reader.z,
            m: false,
        },
        geometry,
    })
}

struct Reader {
    /// Whether any position had an elevation.
    z: bool,
    coordinates: usize,
}

impl Reader {
    fn geometry(&mut self, node: &Node, depth: usize) -> Result<Geometry, GeometryError> {
        if depth > NESTING_MAX {
            return Err(GeometryError::Limit {
                offset: node.offset,
                reason: format!("collections nested deeper than {NESTING_MAX}"),
            });
        }
        if !matches!(node.value, Value::Object(_)) {
            return Err(invalid(node, "geometry must be an object"));
        }
        let Some(Node {
            value: Value::String(name),
            ..
        }) = node.member("type")
        else {
            return Err(invalid(node, "geometry is missing a \"type\" string"));
        };
        let Some(kind) = KINDS.iter().copied().find(|k| k.geojson_name() == name) else {
            return Err(invalid(node, &format!("unknown geometry type \"{name}\"")));
        };
        if kind == Kind::GeometryCollection {
            let items = array_member(node, "geometries", kind)?;
            let geometries = items.iter().map(|g| self.geometry(g, depth + 1));
            return Ok(Geometry::GeometryCollection(
                geometries.collect::<Result<_, _>>()?,
            ));
        }
        let coordinates = array_member(node, "coordinates", kind)?;
        let name = kind.geojson_name();
        Ok(match kind {
            Kind::Point if coordinates.is_empty() => Geometry::Point(None),
            Kind::Point => Geometry::Point(Some(self.position(coordinates, name, node)?)),
            Kind::LineString => Geometry::LineString(self.line(coordinates, name)?),
            Kind::Polygon => Geometry::Polygon(self.rings(coordinates, name)?),
            Kind::MultiPoint => {
                let points = coordinates.iter().map(|p| self.position_node(p, name));
                Geometry::MultiPoint(points.map(|p| p.map(Some)).collect::<Result<_, _>>()?)
            }
            Kind::MultiLineString => {
                Geometry::MultiLineString(
                    self.each(coordinates, name, |r, items| r.line(items, name))?,
                )
            }
            Kind::MultiPolygon => {
                Geometry::MultiPolygon(
                    self.each(coordinates, name, |r, items| r.rings(items, name))?,
                )
            }
            Kind::GeometryCollection => Geometry::GeometryCollection(Vec::new()),
        })
    }

    /// Each item of `items`, itself an array, read by `f`.
    fn each<T>(
        &mut self,
        items: &[Node],
        name: &str,
        mut f: impl FnMut(&mut Self, &[Node]) -> Result<T, GeometryError>,
    ) -> Result<Vec<T>, GeometryError> {
        items
            .iter()
            .map(|item| match &item.value {
                Value::Array(inner) => f(self, inner),
                _ => Err(position_error(item, name)),
            })
            .collect()
    }

    fn line(&mut self, items: &[Node], name: &str) -> Result<Line, GeometryError> {
        items.iter().map(|p| self.position_node(p, name)).collect()
    }

    fn rings(&mut self, items: &[Node], name: &str) -> Result<Rings, GeometryError> {
        self.each(items, name, |r, ring| r.line(ring, name))
    }

    fn position_node(&mut self, node: &Node, name: &str) -> Result<Coord, GeometryError> {
        match &node.value {
            Value::Array(items) => self.position(items, name, node),
            _ => Err(position_error(node, name)),
        }
    }

    fn position(&mut self, items: &[Node], name: &str, at: &Node) -> Result<Coord, GeometryError> {
        self.coordinates += 1;
        if self.coordinates > COORDINATES_MAX {
            return Err(GeometryError::Limit {
                offset: at.offset,
                reason: format!("more than {COORDINATES_MAX} coordinates"),
            });
        }
        let mut numbers = [0.0; 3];
        for (i, item) in items.iter().enumerate() {
            match item.value {
                Value::Number(v) if i < 3 => numbers[i] = v,
                Value::Number(_) => {}
                _ => {
                    return Err(invalid(
                        item,
                        &format!("{name} position must contain only numbers"),
                    ));
                }
            }
        }
        if items.len() < 2 {
            return Err(position_error(at, name));
        }
        self.z |= items.len() >= 3;
        Ok(Coord {
            x: numbers[0],
            y: numbers[1],
            z: numbers[2],
            m: 0.0,
        })
    }
}

fn position_error(node: &Node, name: &str) -> GeometryError {
    invalid(
        node,
        &format!("{name} position must be an array of at least 2 numbers"),
    )
}

/// The array member `key` that a geometry of `kind` requires.
fn array_member<'a>(node: &'a Node, key: &str, kind: Kind) -> Result<&'a [Node], GeometryError> {
    match node.member(key) {
        Some(Node {
            value: Value::Array(items),
            ..
        }) => Ok(items),
        _ => Err(invalid(
            node,
            &format!("{} requires a \"{key}\" array", kind.geojson_name()),
        )),
    }
}

fn write_position(out: &mut String, c: &Coord, z: bool) {
    out.push('[');
    push_json(out, c.x);
    out.push(',');
    push_json(out, c.y);
    if z {
        out.push(',');
        push_json(out, c.z);
    }
    out.push(']');
}

fn write_array<T>(out: &mut String, items: &[T], mut f: impl FnMut(&mut String, &T)) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        f(out, item);
    }
    out.push(']');
}

fn write_line(out: &mut String, line: &Line, z: bool) {
    write_array(out, line, |out, c| write_position(out, c, z));
}

fn write_rings(out: &mut String, rings: &Rings, z: bool) {
    write_array(out, rings, |out, l| write_line(out, l, z));
}

fn write_geometry(out: &mut String, geometry: &Geometry, z: bool) {
    out.push_str("{\"type\":\"");
    out.push_str(geometry.kind().geojson_name());
    if let Geometry::GeometryCollection(items) = geometry {
        out.push_str("\",\"geometries\":");
        write_array(out, items, |out, g| write_geometry(out, g, z));
        out.push('}');
        return;
    }
    out.push_str("\",\"coordinates\":");
    match geometry {
        Geometry::Point(None) => out.push_str("[]"),
        Geometry::Point(Some(c)) => write_position(out, c, z),
        Geometry::LineString(line) => write_line(out, line, z),
        Geometry::Polygon(rings) => write_rings(out, rings, z),
        Geometry::MultiPoint(points) => {
            // GeoJSON has no empty position: DuckDB leaves empty points out.
            let present: Vec<&Coord> = points.iter().flatten().collect();
            write_array(out, &present, |out, c| write_position(out, c, z));
        }
        Geometry::MultiLineString(lines) => write_array(out, lines, |out, l| write_line(out, l, z)),
        Geometry::MultiPolygon(polygons) => {
            write_array(out, polygons, |out, r| write_rings(out, r, z))
        }
        Geometry::GeometryCollection(_) => {}
    }
    out.push('}');
}
