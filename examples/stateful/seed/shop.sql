-- The shop database's seed: `sqlite3 seed/shop.db < seed/shop.sql` makes seed/shop.db.
CREATE TABLE item (sku TEXT PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL);
INSERT INTO item VALUES ('a1', 'pen', 10);
INSERT INTO item VALUES ('b2', 'ink', 0);
