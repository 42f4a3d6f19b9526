"""`attn-practice host`: one class of learners in browsers, served by one (or several) processes.

Layout: `store/` owns every byte of class state (SQLite by default, PostgreSQL
optional) behind named methods; `checks/` runs learners' checks in the
sandboxed engine, off the server process, through a fair queue; the web
modules (`app`, `views_*`, `auth`, `security`) only translate HTTP to calls
on those two and back.
"""
