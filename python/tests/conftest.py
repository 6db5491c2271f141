import pytest

import chainbox


@pytest.fixture(scope="session")
def engine() -> chainbox.Engine:
    # Every Engine shares the process's compiled sandbox: the first builds it.
    return chainbox.Engine()
