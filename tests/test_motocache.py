"""The moto backends memoise moto's JSONPath parse: the cache is hit, and moto answers exactly as without it."""

import json

import jsonpath_ng.ext
import moto.core.responses
import moto.sqs.models
from moto.events.utils import EventTemplateParser
from moto.sqs.responses import SQSResponse

from fleetlab.backends import motocache
from fleetlab.backends.backend import open_backend

CACHED = [(jsonpath_ng.ext, "parse"), (moto.core.responses, "method_names_from_class"),
          (moto.core.responses, "camelcase_to_underscores"), (moto.sqs.models, "camelcase_to_underscores")]
DEFAULT_PATHS = len(EventTemplateParser.DEFAULT_EVENT_INPUT_PATHS_MAP)
EVENT = {"version": "0", "id": "e-1", "detail-type": "step", "source": "fleetlab.test", "account": "123456789012",
         "time": 1796194800.0, "region": "us-east-1", "resources": ["arn:aws:s3:::b"],
         "detail": {"trace_id": "conv-0-step-1", "n": [1, 2]}, "ingestion-time": 1.0}


def test_a_moto_backend_parses_each_path_once_for_the_events_it_delivers_and_forgets_the_cache_on_close():
    originals = [getattr(module, name) for module, name in CACHED]
    backend = open_backend("moto")
    try:
        sqs, events = backend.client("sqs"), backend.client("events")
        url = sqs.create_queue(QueueName="motocache")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(Name="motocache", EventPattern=json.dumps({"source": ["fleetlab.test"]}))
        events.put_targets(Rule="motocache", Targets=[{"Id": "q", "Arn": arn}])
        sent = [{"Source": "fleetlab.test", "DetailType": "step", "Detail": json.dumps({"n": n})} for n in range(3)]
        events.put_events(Entries=sent)

        cache = jsonpath_ng.ext.parse.cache_info()
        received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
        classes = moto.core.responses.method_names_from_class.cache_info()
    finally:
        backend.close()
    assert (cache.misses, cache.hits) == (DEFAULT_PATHS, 2 * DEFAULT_PATHS)  # the first event parses, two reuse
    assert sorted(json.loads(m["Body"])["detail"]["n"] for m in received) == [0, 1, 2]
    assert classes.hits >= 1  # the second ReceiveMessage found SQS's methods listed
    assert [getattr(module, name) for module, name in CACHED] == originals


def test_the_memoised_parse_renders_an_event_as_moto_does_with_and_without_a_transformer():
    template, paths = '{"trace": "<trace>", "first": <first>}', {"trace": "$.detail.trace_id", "first": "$.detail.n[0]"}
    plain = [EventTemplateParser.parse(None, {}, EVENT), EventTemplateParser.parse(template, paths, EVENT)]
    uninstall = motocache.install()
    try:
        memoised = [[EventTemplateParser.parse(None, {}, EVENT), EventTemplateParser.parse(template, paths, EVENT)]
                    for _ in range(2)]
        hits = jsonpath_ng.ext.parse.cache_info().hits
    finally:
        uninstall()
    assert memoised == [plain, plain]
    assert plain[1] == {"trace": "conv-0-step-1", "first": 1}
    assert hits == DEFAULT_PATHS + len(paths)  # the second rendering parsed nothing


def test_the_memoised_name_helpers_answer_as_moto_does():
    names = ["ApproximateNumberOfMessagesNotVisible", "QueueArn", "ReceiveMessage", "FifoQueue", "", "ABCDef"]
    plain = ([moto.core.responses.camelcase_to_underscores(n) for n in names],
             moto.core.responses.method_names_from_class(SQSResponse))
    uninstall = motocache.install()
    try:
        memoised = [([moto.sqs.models.camelcase_to_underscores(n) for n in names],
                     moto.core.responses.method_names_from_class(SQSResponse)) for _ in range(2)]
        hits = (moto.sqs.models.camelcase_to_underscores.cache_info().hits,
                moto.core.responses.method_names_from_class.cache_info().hits)
    finally:
        uninstall()
    assert memoised == [plain, plain]
    assert "receive_message" in plain[1]
    assert hits == (len(names), 1)
