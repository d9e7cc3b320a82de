"""Keys and sealed content on the tables: per-tenant data keys, sealing a memory for
its row, the dashboard's sealed sessions. The primitives are in ``crypto/``."""
