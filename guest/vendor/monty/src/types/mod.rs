/// Type definitions for Python runtime values.
///
/// This module contains structured types that wrap heap-allocated data
/// and provide Python-like semantics for operations like append, insert, etc.
///
/// The `AbstractValue` trait provides a common interface for all heap-allocated
/// types, enabling efficient dispatch via `enum_dispatch`.
pub mod bytes;
pub mod callable_iterator;
pub mod class;
pub mod complex;
pub mod csv;
pub mod date;
pub mod datetime;
pub mod decimal;
pub mod deque;
pub mod dict;
pub mod dict_view;
pub mod dir_scan;
pub mod ext_function;
pub mod file;
pub mod generic_alias;
pub mod hash_table;
pub mod hashlib;
pub mod host_class;
pub mod instance;
// chainbox patch (CHAINBOX.md)
pub mod isoformat;
pub mod iter;
pub mod itertools;
pub mod list;
pub mod long_int;
pub mod lru_cache;
pub mod module;
pub mod namedtuple;
pub(crate) mod number_methods;
pub(crate) mod numeric;
pub mod partial;
pub mod path;
pub(crate) mod plain_object;
pub mod property;
pub mod py_trait;
pub mod random;
pub mod range;
pub mod re_match;
pub mod re_pattern;
pub(crate) mod re_syntax;
pub(crate) mod re_template;
pub mod set;
pub mod slice;
pub mod str;
pub(crate) mod strptime_re;
pub mod time;
pub mod timedelta;
pub mod timezone;
pub mod tuple;
pub mod r#type;
mod unicode_type;
mod unicode_type_data;
pub mod union;

pub(crate) use bytes::{Bytes, BytesIterator};
pub(crate) use class::Class;
pub(crate) use complex::Complex;
pub(crate) use csv::CsvObject;
pub(crate) use deque::Deque;
pub(crate) use dict::{Dict, DictItemIterator, DictKeyIterator, DictValueIterator};
pub(crate) use dict_view::{DictItemsView, DictKeysView, DictValuesView};
pub(crate) use dir_scan::DirScan;
pub(crate) use ext_function::ExtFunction;
pub(crate) use file::OpenFile;
pub(crate) use generic_alias::GenericAlias;
pub(crate) use hashlib::HashObject;
pub(crate) use host_class::{HostClass, HostClassType, host_class_type};
pub(crate) use instance::{BoundMethod, Instance, instance_call_copy_hook};
pub(crate) use iter::{collect_iterable, collect_iterable_bounded};
pub(crate) use itertools::ItertoolsIter;
pub(crate) use list::List;
pub(crate) use long_int::LongInt;
pub(crate) use lru_cache::LruCache;
pub(crate) use module::Module;
pub(crate) use namedtuple::{NamedTuple, NamedTupleClass};
pub(crate) use partial::Partial;
pub(crate) use path::Path;
// chainbox patch: imports for this file's patches (CHAINBOX.md)
pub(crate) use plain_object::PlainObject;
pub(crate) use property::Property;
pub(crate) use py_trait::{CmpOrder, LazyHeapSet, PyTrait, attribute_name_value};
pub(crate) use random::{Random, SessionRandom};
pub(crate) use range::{Range, RangeIterator};
pub(crate) use re_match::ReMatch;
pub(crate) use re_pattern::{BoundedCompileError, RePattern};
pub(crate) use set::{FrozenSet, Set, SetIterator};
pub(crate) use slice::Slice;
pub(crate) use str::{Str, StringIterator, allocate_string};
pub(crate) use timedelta::TimeDelta;
pub(crate) use timezone::TimeZone;
pub(crate) use tuple::{Tuple, TupleIterator, TupleVec, allocate_tuple};
pub(crate) use r#type::Type;
pub(crate) use union::Union;
