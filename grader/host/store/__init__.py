"""The class's state: `factory.open_store` picks SQLite (default) or PostgreSQL."""
