//! The geometry tree: OGC simple features with one set of dimensions for the whole.

/// Which optional ordinates every coordinate of a geometry carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Dims {
    /// Elevation (Z).
    pub z: bool,
    /// Measure (M).
    pub m: bool,
}

impl Dims {
    /// How many ordinates a coordinate has: 2 to 4.
    pub fn count(self) -> usize {
        2 + usize::from(self.z) + usize::from(self.m)
    }

    /// The suffix of the type in WKT (`""`, `" Z"`, `" M"`, `" ZM"`).
    pub fn wkt_suffix(self) -> &'static str {
        match (self.z, self.m) {
            (false, false) => "",
            (true, false) => " Z",
            (false, true) => " M",
            (true, true) => " ZM",
        }
    }
}

/// One position; `z` and `m` are meaningful only when the geometry's [`Dims`] say so
/// (and are 0 otherwise).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Coord {
    /// First ordinate (longitude, easting).
    pub x: f64,
    /// Second ordinate (latitude, northing).
    pub y: f64,
    /// Elevation.
    pub z: f64,
    /// Measure.
    pub m: f64,
}

impl Coord {
    /// The ordinates the dimensions select, in order x, y, z, m.
    pub fn ordinates(&self, dims: Dims) -> impl Iterator<Item = f64> {
        [
            Some(self.x),
            Some(self.y),
            dims.z.then_some(self.z),
            dims.m.then_some(self.m),
        ]
        .into_iter()
        .flatten()
    }
}

/// A line string or ring: its coordinates in order.
pub type Line = Vec<Coord>;
/// A polygon: its exterior ring, then its holes.
pub type Rings = Vec<Line>;

/// A geometry; an empty vector (or a point without a coordinate) is `EMPTY`.
#[derive(Debug, Clone, PartialEq)]
pub enum Geometry {
    /// A point, or the empty point.
    Point(Option<Coord>),
    /// A line string.
    LineString(Line),
    /// A polygon.
    Polygon(Rings),
    /// Points, each possibly empty (`MULTIPOINT (1 2, EMPTY)`).
    MultiPoint(Vec<Option<Coord>>),
    /// Line strings.
    MultiLineString(Vec<Line>),
    /// Polygons.
    MultiPolygon(Vec<Rings>),
    /// Any geometries, collections included.
    GeometryCollection(Vec<Geometry>),
}

/// The kinds of geometry, with their names in WKT, GeoJSON and their WKB codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `POINT`.
    Point,
    /// `LINESTRING`.
    LineString,
    /// `POLYGON`.
    Polygon,
    /// `MULTIPOINT`.
    MultiPoint,
    /// `MULTILINESTRING`.
    MultiLineString,
    /// `MULTIPOLYGON`.
    MultiPolygon,
    /// `GEOMETRYCOLLECTION`.
    GeometryCollection,
}

/// Every kind, in WKB code order (code = index + 1).
pub const KINDS: [Kind; 7] = [
    Kind::Point,
    Kind::LineString,
    Kind::Polygon,
    Kind::MultiPoint,
    Kind::MultiLineString,
    Kind::MultiPolygon,
    Kind::GeometryCollection,
];

impl Kind {
    /// The WKT keyword.
    pub fn wkt_name(self) -> &'static str {
        match self {
            Kind::Point => "POINT",
            Kind::LineString => "LINESTRING",
            Kind::Polygon => "POLYGON",
            Kind::MultiPoint => "MULTIPOINT",
            Kind::MultiLineString => "MULTILINESTRING",
            Kind::MultiPolygon => "MULTIPOLYGON",
            Kind::GeometryCollection => "GEOMETRYCOLLECTION",
        }
    }

    /// The GeoJSON `type` member.
    pub fn geojson_name(self) -> &'static str {
        match self {
            Kind::Point => "Point",
            Kind::LineString => "LineString",
            Kind::Polygon => "Polygon",
            Kind::MultiPoint => "MultiPoint",
            Kind::MultiLineString => "MultiLineString",
            Kind::MultiPolygon => "MultiPolygon",
            Kind::GeometryCollection => "GeometryCollection",
        }
    }

    /// The ISO WKB type code of the 2D form.
    pub fn wkb_code(self) -> u32 {
        KINDS.iter().position(|k| *k == self).unwrap_or(0) as u32 + 1
    }
}

impl Geometry {
    /// The kind of this geometry.
    pub fn kind(&self) -> Kind {
        match self {
            Geometry::Point(_) => Kind::Point,
            Geometry::LineString(_) => Kind::LineString,
            Geometry::Polygon(_) => Kind::Polygon,
            Geometry::MultiPoint(_) => Kind::MultiPoint,
            Geometry::MultiLineString(_) => Kind::MultiLineString,
            Geometry::MultiPolygon(_) => Kind::MultiPolygon,
            Geometry::GeometryCollection(_) => Kind::GeometryCollection,
        }
    }

    /// Whether the geometry is `EMPTY` at its top level.
    pub fn is_empty(&self) -> bool {
        match self {
            Geometry::Point(p) => p.is_none(),
            Geometry::LineString(v) => v.is_empty(),
            Geometry::Polygon(v) => v.is_empty(),
            Geometry::MultiPoint(v) => v.is_empty(),
            Geometry::MultiLineString(v) => v.is_empty(),
            Geometry::MultiPolygon(v) => v.is_empty(),
            Geometry::GeometryCollection(v) => v.is_empty(),
        }
    }
}

/// A geometry with its dimensions: what one `GEOMETRY` value holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// The dimensions of every coordinate in the tree.
    pub dims: Dims,
    /// The geometry.
    pub geometry: Geometry,
}
