//! The shape of a query: how much of the table its filter lets the service read, worked out
//! from the PartitionKey and RowKey conditions the filter is bound to meet.
//!
//! Only conditions every result must satisfy count: the conjuncts of an `and`, every branch of
//! an `or`. A `not`, a `ne`, a bare Boolean property or a condition on any other property
//! narrows nothing the service can seek on, so on its own it leaves the whole table to read.

use table_core::{CompareOp, Filter};

/// How much of the table a query reads, from the narrowest to the widest.
///
/// [`Query::shape`](crate::Query::shape) reports it; a typed query whose shape is
/// [`QueryShape::TableScan`] is refused unless it calls
/// [`Query::table_scan`](crate::Query::table_scan).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum QueryShape {
    /// One entity: `PartitionKey eq .. and RowKey eq ..`.
    Point,
    /// One partition: `PartitionKey eq ..`, possibly with RowKey ranges or other conditions.
    PartitionScan,
    /// Several named partitions: an `or` whose every branch names one partition.
    Partitions,
    /// A contiguous range of partitions, bounded below and above (`PartitionKey ge .. and
    /// PartitionKey lt ..`). A one-sided bound may reach either end of the table, so it counts
    /// as a table scan.
    PartitionRange,
    /// Every partition of the table: no condition bounds the PartitionKey.
    TableScan,
}

impl QueryShape {
    /// The shape of a query with this filter (`None`: no filter at all).
    pub(crate) fn of(filter: Option<&Filter>) -> QueryShape {
        filter.map_or(QueryShape::TableScan, shape)
    }
}

fn shape(filter: &Filter) -> QueryShape {
    match filter {
        Filter::And(..) => conjunction(filter),
        Filter::Or(left, right) => match shape(left).max(shape(right)) {
            QueryShape::Point | QueryShape::PartitionScan => QueryShape::Partitions,
            wider => wider,
        },
        // A single comparison: a conjunction of one.
        Filter::Compare { .. } => conjunction(filter),
        Filter::Property(_) | Filter::Not(_) => QueryShape::TableScan,
    }
}

/// The shape of `a and b and ..`: the narrowest its conjuncts allow, where a PartitionKey
/// equality with a RowKey equality beside it is one entity, and a PartitionKey bound below and
/// above is a range.
fn conjunction(filter: &Filter) -> QueryShape {
    let mut conjuncts = Vec::new();
    flatten_and(filter, &mut conjuncts);
    let compares = |property: &str, ops: &[CompareOp]| {
        conjuncts.iter().any(
            |c| matches!(c, Filter::Compare { property: p, op, .. } if p == property && ops.contains(op)),
        )
    };
    if compares("PartitionKey", &[CompareOp::Eq]) {
        return match compares("RowKey", &[CompareOp::Eq]) {
            true => QueryShape::Point,
            false => QueryShape::PartitionScan,
        };
    }
    let range = compares("PartitionKey", &[CompareOp::Ge, CompareOp::Gt])
        && compares("PartitionKey", &[CompareOp::Le, CompareOp::Lt]);
    let nested = conjuncts
        .iter()
        .filter(|c| !matches!(c, Filter::Compare { .. }))
        .map(|c| shape(c))
        .min()
        .unwrap_or(QueryShape::TableScan);
    match range {
        true => nested.min(QueryShape::PartitionRange),
        false => nested,
    }
}

fn flatten_and<'a>(filter: &'a Filter, out: &mut Vec<&'a Filter>) {
    match filter {
        Filter::And(left, right) => {
            flatten_and(left, out);
            flatten_and(right, out);
        }
        other => out.push(other),
    }
}

#[cfg(test)]
mod tests {
    use std::ops::Bound;

    use proptest::prelude::*;

    use super::*;

    fn of(filter: Filter) -> QueryShape {
        QueryShape::of(Some(&filter))
    }

    #[test]
    fn each_shape_is_recognised() {
        let pk = || Filter::partition_key_eq("a");
        assert_eq!(QueryShape::of(None), QueryShape::TableScan);
        assert_eq!(of(pk().and(Filter::eq("RowKey", "r"))), QueryShape::Point);
        assert_eq!(of(Filter::eq("RowKey", "r").and(Filter::gt("Age", 3)).and(pk())), QueryShape::Point);
        assert_eq!(of(pk()), QueryShape::PartitionScan);
        assert_eq!(of(pk().and(Filter::prefix("RowKey", "x"))), QueryShape::PartitionScan);
        assert_eq!(of(pk().or(Filter::partition_key_eq("b"))), QueryShape::Partitions);
        assert_eq!(
            of(pk().and(Filter::eq("RowKey", "r")).or(Filter::partition_key_eq("b"))),
            QueryShape::Partitions
        );
        assert_eq!(of(Filter::prefix("PartitionKey", "Sup")), QueryShape::PartitionRange);
        let range = Filter::range("PartitionKey", Bound::Included("a"), Bound::Excluded("m"));
        assert_eq!(of(range.or(pk())), QueryShape::PartitionRange);
        assert_eq!(of(Filter::gt("Age", 3)), QueryShape::TableScan);
        assert_eq!(of(Filter::eq("RowKey", "r")), QueryShape::TableScan);
        assert_eq!(of(Filter::ge("PartitionKey", "a")), QueryShape::TableScan);
        assert_eq!(of(Filter::ne("PartitionKey", "a")), QueryShape::TableScan);
        assert_eq!(of(!pk()), QueryShape::TableScan);
        assert_eq!(of(pk().or(Filter::gt("Age", 3))), QueryShape::TableScan);
        assert_eq!(of(Filter::property("Active").and(pk())), QueryShape::PartitionScan);
    }

    fn leaf() -> impl Strategy<Value = Filter> {
        let op = prop::sample::select(CompareOp::ALL.to_vec());
        let property = prop::sample::select(vec!["PartitionKey", "RowKey", "Age"]);
        let value = prop::sample::select(vec!["", "a", "m", "z"]);
        prop_oneof![
            (property, op, value).prop_map(|(p, op, v)| Filter::compare(p, op, v)),
            Just(Filter::property("Active")),
        ]
    }

    fn filter() -> impl Strategy<Value = Filter> {
        leaf().prop_recursive(4, 24, 2, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(a, b)| a.and(b)),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| a.or(b)),
                inner.prop_map(|a| !a),
            ]
        })
    }

    /// The partition keys a filter can match, when it matches only the listed ones.
    fn partitions_reached(filter: &Filter) -> Vec<&'static str> {
        ["", "a", "b", "m", "n", "z", "zz"]
            .into_iter()
            .filter(|pk| {
                ["", "a", "r"].into_iter().any(|rk| {
                    [None, Some(true)].into_iter().any(|active| {
                        let mut e = table_core::Entity::new(*pk, rk);
                        e.insert("Age", "m");
                        if let Some(active) = active {
                            e.insert("Active", active);
                        }
                        filter.matches(&e)
                    })
                })
            })
            .collect()
    }

    proptest! {
        /// A point or a partition scan reaches at most one partition; `and` never widens the
        /// narrower side; `or` is as wide as its wider branch, and at least several partitions.
        #[test]
        fn the_shape_never_promises_less_than_the_filter_reads(a in filter(), b in filter()) {
            let (sa, sb) = (of(a.clone()), of(b.clone()));
            if sa <= QueryShape::PartitionScan {
                prop_assert!(partitions_reached(&a).len() <= 1, "{a} is {sa:?}");
            }
            prop_assert!(of(a.clone().and(b.clone())) <= sa.min(sb));
            prop_assert_eq!(of(a.or(b)), sa.max(sb).max(QueryShape::Partitions));
        }
    }
}
