#!/usr/bin/env python3
"""Writes queries/tessera.sql and queries/duckdb.sql: the 22 TPC-H queries over the
combined JSON TPC-H stream, a table `tpch(j)` with one JSON object per row of any table.

Each query is the TPC-H specification's text (clause 2.4) with its default substitution
parameters, prefixed by one CTE per table it reads. A CTE selects its table's rows by the
presence of the table's key column and extracts, typed, just the columns the query uses;
only those extraction expressions differ between the dialects, so both files come from
this one source. Run it after editing a query: `bench/tpch_json/make_queries.py`.

Deviations from the specification's text, all forced by DOUBLE money columns (JSON
numbers are binary floats): Q6's discount range is written precomputed (0.05 to 0.07,
since 0.06 + 0.01 is below 0.07 in floating point), and Q15 compares revenues rounded to
cents (its view may be evaluated twice, in different summation orders). Q11's FRACTION
is 0.0001 / SF, as the specification requires; `:SF` is replaced when the queries run.
"""

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (table, key column, columns with their types), in TPC-H's column order.
TABLES = {
    "region": ("r_regionkey", "r_regionkey:int r_name:str r_comment:str"),
    "nation": ("n_nationkey", "n_nationkey:int n_name:str n_regionkey:int n_comment:str"),
    "supplier": (
        "s_suppkey",
        "s_suppkey:int s_name:str s_address:str s_nationkey:int s_phone:str s_acctbal:dec s_comment:str",
    ),
    "customer": (
        "c_custkey",
        "c_custkey:int c_name:str c_address:str c_nationkey:int c_phone:str c_acctbal:dec "
        "c_mktsegment:str c_comment:str",
    ),
    "part": (
        "p_partkey",
        "p_partkey:int p_name:str p_mfgr:str p_brand:str p_type:str p_size:int p_container:str "
        "p_retailprice:dec p_comment:str",
    ),
    "partsupp": ("ps_partkey", "ps_partkey:int ps_suppkey:int ps_availqty:int ps_supplycost:dec ps_comment:str"),
    "orders": (
        "o_orderkey",
        "o_orderkey:int o_custkey:int o_orderstatus:str o_totalprice:dec o_orderdate:date "
        "o_orderpriority:str o_clerk:str o_shippriority:int o_comment:str",
    ),
    "lineitem": (
        "l_orderkey",
        "l_orderkey:int l_partkey:int l_suppkey:int l_linenumber:int l_quantity:dec l_extendedprice:dec "
        "l_discount:dec l_tax:dec l_returnflag:str l_linestatus:str l_shipdate:date l_commitdate:date "
        "l_receiptdate:date l_shipinstruct:str l_shipmode:str l_comment:str",
    ),
}

# How each dialect extracts a typed column `c` from the document `j`.
DIALECTS = {
    "tessera": {
        "int": "json_get_int(j, '{c}')",
        "dec": "json_get_float(j, '{c}')",
        "str": "j->>'{c}'",
        "date": "(j->>'{c}')::DATE",
    },
    "duckdb": {
        "int": "(j->>'{c}')::BIGINT",
        "dec": "(j->>'{c}')::DOUBLE",
        "str": "j->>'{c}'",
        "date": "(j->>'{c}')::DATE",
    },
}

QUERIES = [
    # Q1 pricing summary report
    """select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price,
  sum(l_extendedprice * (1 - l_discount)) as sum_disc_price, sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
  avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc, count(*) as count_order
from lineitem
where l_shipdate <= date '1998-12-01' - interval '90' day
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus""",
    # Q2 minimum cost supplier
    """select s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
from part, supplier, partsupp, nation, region
where p_partkey = ps_partkey and s_suppkey = ps_suppkey and p_size = 15 and p_type like '%BRASS'
  and s_nationkey = n_nationkey and n_regionkey = r_regionkey and r_name = 'EUROPE'
  and ps_supplycost = (select min(ps_supplycost) from partsupp, supplier, nation, region
    where p_partkey = ps_partkey and s_suppkey = ps_suppkey and s_nationkey = n_nationkey
      and n_regionkey = r_regionkey and r_name = 'EUROPE')
order by s_acctbal desc, n_name, s_name, p_partkey
limit 100""",
    # Q3 shipping priority
    """select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate, o_shippriority
from customer, orders, lineitem
where c_mktsegment = 'BUILDING' and c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15'
group by l_orderkey, o_orderdate, o_shippriority
order by revenue desc, o_orderdate
limit 10""",
    # Q4 order priority checking
    """select o_orderpriority, count(*) as order_count
from orders
where o_orderdate >= date '1993-07-01' and o_orderdate < date '1993-07-01' + interval '3' month
  and exists (select * from lineitem where l_orderkey = o_orderkey and l_commitdate < l_receiptdate)
group by o_orderpriority
order by o_orderpriority""",
    # Q5 local supplier volume
    """select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
from customer, orders, lineitem, supplier, nation, region
where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey
  and c_nationkey = s_nationkey and s_nationkey = n_nationkey and n_regionkey = r_regionkey
  and r_name = 'ASIA' and o_orderdate >= date '1994-01-01' and o_orderdate < date '1994-01-01' + interval '1' year
group by n_name
order by revenue desc""",
    # Q6 forecasting revenue change
    """select sum(l_extendedprice * l_discount) as revenue
from lineitem
where l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year
  and l_discount between 0.05 and 0.07 and l_quantity < 24""",
    # Q7 volume shipping
    """select supp_nation, cust_nation, l_year, sum(volume) as revenue
from (select n1.n_name as supp_nation, n2.n_name as cust_nation, extract(year from l_shipdate) as l_year,
    l_extendedprice * (1 - l_discount) as volume
  from supplier, lineitem, orders, customer, nation n1, nation n2
  where s_suppkey = l_suppkey and o_orderkey = l_orderkey and c_custkey = o_custkey
    and s_nationkey = n1.n_nationkey and c_nationkey = n2.n_nationkey
    and ((n1.n_name = 'FRANCE' and n2.n_name = 'GERMANY') or (n1.n_name = 'GERMANY' and n2.n_name = 'FRANCE'))
    and l_shipdate between date '1995-01-01' and date '1996-12-31') as shipping
group by supp_nation, cust_nation, l_year
order by supp_nation, cust_nation, l_year""",
    # Q8 national market share
    """select o_year, sum(case when nation = 'BRAZIL' then volume else 0 end) / sum(volume) as mkt_share
from (select extract(year from o_orderdate) as o_year, l_extendedprice * (1 - l_discount) as volume, n2.n_name as nation
  from part, supplier, lineitem, orders, customer, nation n1, nation n2, region
  where p_partkey = l_partkey and s_suppkey = l_suppkey and l_orderkey = o_orderkey and o_custkey = c_custkey
    and c_nationkey = n1.n_nationkey and n1.n_regionkey = r_regionkey and r_name = 'AMERICA'
    and s_nationkey = n2.n_nationkey and o_orderdate between date '1995-01-01' and date '1996-12-31'
    and p_type = 'ECONOMY ANODIZED STEEL') as all_nations
group by o_year
order by o_year""",
    # Q9 product type profit measure
    """select nation, o_year, sum(amount) as sum_profit
from (select n_name as nation, extract(year from o_orderdate) as o_year,
    l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity as amount
  from part, supplier, lineitem, partsupp, orders, nation
  where s_suppkey = l_suppkey and ps_suppkey = l_suppkey and ps_partkey = l_partkey and p_partkey = l_partkey
    and o_orderkey = l_orderkey and s_nationkey = n_nationkey and p_name like '%green%') as profit
group by nation, o_year
order by nation, o_year desc""",
    # Q10 returned item reporting
    """select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, c_acctbal, n_name, c_address, c_phone, c_comment
from customer, orders, lineitem, nation
where c_custkey = o_custkey and l_orderkey = o_orderkey and o_orderdate >= date '1993-10-01'
  and o_orderdate < date '1993-10-01' + interval '3' month and l_returnflag = 'R' and c_nationkey = n_nationkey
group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
order by revenue desc
limit 20""",
    # Q11 important stock identification
    """select ps_partkey, sum(ps_supplycost * ps_availqty) as value
from partsupp, supplier, nation
where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = 'GERMANY'
group by ps_partkey
having sum(ps_supplycost * ps_availqty) > (select sum(ps_supplycost * ps_availqty) * 0.0001 / :SF
  from partsupp, supplier, nation
  where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = 'GERMANY')
order by value desc""",
    # Q12 shipping modes and order priority
    """select l_shipmode,
  sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH' then 1 else 0 end) as high_line_count,
  sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' then 1 else 0 end) as low_line_count
from orders, lineitem
where o_orderkey = l_orderkey and l_shipmode in ('MAIL', 'SHIP') and l_commitdate < l_receiptdate
  and l_shipdate < l_commitdate and l_receiptdate >= date '1994-01-01' and l_receiptdate < date '1994-01-01' + interval '1' year
group by l_shipmode
order by l_shipmode""",
    # Q13 customer distribution
    """select c_count, count(*) as custdist
from (select c_custkey, count(o_orderkey) as c_count
  from customer left outer join orders on c_custkey = o_custkey and o_comment not like '%special%requests%'
  group by c_custkey) as c_orders
group by c_count
order by custdist desc, c_count desc""",
    # Q14 promotion effect
    """select 100.00 * sum(case when p_type like 'PROMO%' then l_extendedprice * (1 - l_discount) else 0 end)
  / sum(l_extendedprice * (1 - l_discount)) as promo_revenue
from lineitem, part
where l_partkey = p_partkey and l_shipdate >= date '1995-09-01' and l_shipdate < date '1995-09-01' + interval '1' month""",
    # Q15 top supplier
    """with revenue0 as (select l_suppkey as supplier_no, sum(l_extendedprice * (1 - l_discount)) as total_revenue
  from lineitem
  where l_shipdate >= date '1996-01-01' and l_shipdate < date '1996-01-01' + interval '3' month
  group by l_suppkey)
select s_suppkey, s_name, s_address, s_phone, total_revenue
from supplier, revenue0
where s_suppkey = supplier_no and round(total_revenue, 2) = (select round(max(total_revenue), 2) from revenue0)
order by s_suppkey""",
    # Q16 parts/supplier relationship
    """select p_brand, p_type, p_size, count(distinct ps_suppkey) as supplier_cnt
from partsupp, part
where p_partkey = ps_partkey and p_brand <> 'Brand#45' and p_type not like 'MEDIUM POLISHED%'
  and p_size in (49, 14, 23, 45, 19, 3, 36, 9)
  and ps_suppkey not in (select s_suppkey from supplier where s_comment like '%Customer%Complaints%')
group by p_brand, p_type, p_size
order by supplier_cnt desc, p_brand, p_type, p_size""",
    # Q17 small-quantity-order revenue
    """select sum(l_extendedprice) / 7.0 as avg_yearly
from lineitem, part
where p_partkey = l_partkey and p_brand = 'Brand#23' and p_container = 'MED BOX'
  and l_quantity < (select 0.2 * avg(l_quantity) from lineitem where l_partkey = p_partkey)""",
    # Q18 large volume customer
    """select c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity) as sum_qty
from customer, orders, lineitem
where o_orderkey in (select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > 300)
  and c_custkey = o_custkey and o_orderkey = l_orderkey
group by c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
order by o_totalprice desc, o_orderdate
limit 100""",
    # Q19 discounted revenue
    """select sum(l_extendedprice * (1 - l_discount)) as revenue
from lineitem, part
where (p_partkey = l_partkey and p_brand = 'Brand#12' and p_container in ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
    and l_quantity >= 1 and l_quantity <= 1 + 10 and p_size between 1 and 5
    and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')
  or (p_partkey = l_partkey and p_brand = 'Brand#23' and p_container in ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
    and l_quantity >= 10 and l_quantity <= 10 + 10 and p_size between 1 and 10
    and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')
  or (p_partkey = l_partkey and p_brand = 'Brand#34' and p_container in ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
    and l_quantity >= 20 and l_quantity <= 20 + 10 and p_size between 1 and 15
    and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')""",
    # Q20 potential part promotion
    """select s_name, s_address
from supplier, nation
where s_suppkey in (select ps_suppkey from partsupp
    where ps_partkey in (select p_partkey from part where p_name like 'forest%')
      and ps_availqty > (select 0.5 * sum(l_quantity) from lineitem
        where l_partkey = ps_partkey and l_suppkey = ps_suppkey
          and l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year))
  and s_nationkey = n_nationkey and n_name = 'CANADA'
order by s_name""",
    # Q21 suppliers who kept orders waiting
    """select s_name, count(*) as numwait
from supplier, lineitem l1, orders, nation
where s_suppkey = l1.l_suppkey and o_orderkey = l1.l_orderkey and o_orderstatus = 'F'
  and l1.l_receiptdate > l1.l_commitdate
  and exists (select * from lineitem l2 where l2.l_orderkey = l1.l_orderkey and l2.l_suppkey <> l1.l_suppkey)
  and not exists (select * from lineitem l3 where l3.l_orderkey = l1.l_orderkey and l3.l_suppkey <> l1.l_suppkey
    and l3.l_receiptdate > l3.l_commitdate)
  and s_nationkey = n_nationkey and n_name = 'SAUDI ARABIA'
group by s_name
order by numwait desc, s_name
limit 100""",
    # Q22 global sales opportunity
    """select cntrycode, count(*) as numcust, sum(c_acctbal) as totacctbal
from (select substring(c_phone from 1 for 2) as cntrycode, c_acctbal
  from customer
  where substring(c_phone from 1 for 2) in ('13', '31', '23', '29', '30', '18', '17')
    and c_acctbal > (select avg(c_acctbal) from customer
      where c_acctbal > 0.00 and substring(c_phone from 1 for 2) in ('13', '31', '23', '29', '30', '18', '17'))
    and not exists (select * from orders where o_custkey = c_custkey)) as custsale
group by cntrycode
order by cntrycode""",
]


def columns(table: str) -> list[tuple[str, str]]:
    return [tuple(c.split(":")) for c in TABLES[table][1].split()]


def table_cte(table: str, body: str, dialect: dict) -> str | None:
    """The CTE of `table` with the columns `body` mentions, or None if it uses none."""
    used = [(c, t) for c, t in columns(table) if re.search(rf"\b{c}\b", body)]
    if not used:
        return None
    key = TABLES[table][0]
    fields = ", ".join(f"{dialect[t].format(c=c)} AS {c}" for c, t in used)
    return f"{table} AS (SELECT {fields} FROM tpch WHERE j->>'{key}' IS NOT NULL)"


def render(body: str, dialect: dict) -> str:
    ctes = [cte for table in TABLES if (cte := table_cte(table, body, dialect))]
    if body.startswith("with "):
        ctes.append(body[len("with ") : body.index("\nselect")])
        body = body[body.index("\nselect") + 1 :]
    return "with " + ",\n  ".join(ctes) + "\n" + body + ";"


def main() -> None:
    for name, dialect in DIALECTS.items():
        lines = [
            f"-- The 22 TPC-H queries over combined JSON TPC-H, table tpch(j), {name} dialect.",
            "-- Generated by bench/tpch_json/make_queries.py (edit there); ':SF' is the scale factor.",
        ]
        for number, body in enumerate(QUERIES, start=1):
            lines += ["", f"-- Q{number}", render(body, dialect)]
        (HERE / "queries" / f"{name}.sql").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
