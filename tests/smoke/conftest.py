"""Fixtures the smoke's summary tests share: the plan and scenario of
`pdrepro smoke --prompt-lens 128,4096,32768 --repeats 3`, as the smoke records them."""

import pytest

from pdrepro.commands.smoke import as_run
from pdrepro.scenario.model import load_scenario
from pdrepro.scenario.smokeplan import make_plan


@pytest.fixture(scope="module")
def plan():
    return make_plan(load_scenario("smoke-tcp"), prompt_lens=[128, 4096, 32768], repeats=3)


@pytest.fixture(scope="module")
def scenario(plan):
    return as_run(load_scenario("smoke-tcp"), plan)
