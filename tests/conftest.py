pytest_plugins = ["tests.postgres_server"]
