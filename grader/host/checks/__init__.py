"""Learners' checks off the server process: `factory.open_runner` picks the local pool or Dask."""
