"""
moto's server (`python3 -m moto.server`), with two behaviours of CloudFormation that moto lacks
and that every `cdk deploy` of an Oncely app meets:

- An AWS::SQS::Queue with FifoQueue and no QueueName gets a generated name ending in `.fifo`, as
  CloudFormation gives it. moto names it `<stack>-<logical id>-<suffix>`, which SQS refuses
  ("Queue name must end in .fifo"): no stack with an unnamed FIFO queue would deploy.
- An update may keep a parameter's previous value (`UsePreviousValue`, as the CDK CLI sends for
  `BootstrapVersion`) even when the stack took that parameter's default. moto looks the value up
  among the values given at creation only, and answers 500: no stack would update.

Usage: python3 moto_server.py -H 127.0.0.1 -p PORT (any argument of moto.server).
"""

import sys

from moto import server
from moto.cloudformation.models import CloudFormationBackend
from moto.sqs.models import Queue

# A queue name has at most 80 characters, the suffix included.
MAX_NAME = 80
FIFO_SUFFIX = ".fifo"

create_queue = Queue.create_from_cloudformation_json.__func__


def create_with_fifo_name(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    properties = cloudformation_json.get("Properties", {})
    fifo = str(properties.get("FifoQueue", "false")).lower() == "true"
    name = str(resource_name)
    if fifo and not name.endswith(FIFO_SUFFIX):
        name = name[: MAX_NAME - len(FIFO_SUFFIX)] + FIFO_SUFFIX
    return create_queue(cls, name, cloudformation_json, account_id, region_name, **kwargs)


Queue.create_from_cloudformation_json = classmethod(create_with_fifo_name)


def resolve_update_parameters(self, instance, incoming_params):
    parameters = {p["ParameterKey"]: p["ParameterValue"] for p in incoming_params if "ParameterValue" in p}
    # A parameter that took its default keeps it: leaving it out lets the template's default apply.
    for p in incoming_params:
        key = p["ParameterKey"]
        if p.get("UsePreviousValue", False) and key in instance.parameters:
            parameters[key] = instance.parameters[key]
    return parameters


CloudFormationBackend._resolve_update_parameters = resolve_update_parameters

if __name__ == "__main__":
    server.main(sys.argv[1:])
