"""The moto backends memoise moto's JSONPath parse (the cache is hit) and take shortcuts past its slow detours,
and moto answers exactly as without them."""

import datetime
import json

import jsonpath_ng.ext
import moto.core.responses
import moto.core.utils
import moto.sqs.models
import pytest
import time_machine
from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.dynamodb.parsing.expressions import UpdateExpressionParser
from moto.events.utils import EventTemplateParser
from moto.sqs.models import SQSBackend
from moto.sqs.responses import SQSResponse

from fleetlab.backends import motocache
from fleetlab.backends.backend import open_backend
from fleetlab.core.errors import BackendUnavailable

CACHED = [(jsonpath_ng.ext, "parse"), (moto.core.responses, "method_names_from_class"),
          (moto.core.responses, "camelcase_to_underscores"), (moto.sqs.models, "camelcase_to_underscores")]


def replaced():
    """Where each of motocache's replacements goes: (module or class, name)."""
    modules = [__import__(module, fromlist=["_"]) for module, *_ in motocache.REPLACED]
    return [(getattr(module, owner) if owner else module, name)
            for module, (_, owner, name, _) in zip(modules, motocache.REPLACED)]


REPLACED_ORIGINALS = [vars(owner)[name] for owner, name in replaced()]
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
    assert [vars(owner)[name] for owner, name in replaced()] == REPLACED_ORIGINALS


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


@pytest.mark.parametrize("instant", [1796194800.0, 1796194800.9999996, 1796194800.1234567, 1.0000005])
def test_the_shortcut_clock_reads_the_same_float_as_moto_at_any_instant(instant):
    moment = datetime.datetime(2026, 12, 2, 18, 30, 15, 250_001)
    with time_machine.travel(instant, tick=False):
        plain = (moto.core.utils.unix_time(), moto.core.utils.unix_time_millis(), moto.core.utils.unix_time(moment))
        uninstall = motocache.install()
        try:
            shortcut = (moto.sqs.models.unix_time(), moto.core.utils.unix_time_millis(),
                        moto.core.utils.unix_time(moment))
        finally:
            uninstall()
    assert shortcut == plain


def test_the_retention_shortcut_keeps_a_message_exactly_as_long_as_moto_does():
    backend = SQSBackend("us-east-1", "123456789012")
    with time_machine.travel(1796194800.0, tick=False) as traveller:
        backend.create_queue("retained", MessageRetentionPeriod="60")
        message = backend.send_message("retained", "body")
        answers = []
        for seconds in (0, 59.999, 0.001, 1):  # inside the period, its last instant, past it
            traveller.shift(seconds)
            plain = SQSBackend.is_message_valid_based_on_retention_period(backend, "retained", message)
            uninstall = motocache.install()
            try:
                answers.append((plain, SQSBackend.is_message_valid_based_on_retention_period(backend, "retained", message)))
            finally:
                uninstall()
    assert answers == [(True, True), (True, True), (False, False), (False, False)]


def test_the_lexer_lexes_each_condition_once_and_hands_out_the_same_tokens_every_time(monkeypatch):
    expressions = ["attribute_not_exists(pk) OR (#status = :inprogress AND lease_until < :now)", "#owner = :owner"]
    plain = [list(ConditionExpressionParser(e, {}, {})._lex_condition_expression()) for e in expressions]
    lex_one, tokens_lexed = ConditionExpressionParser._lex_one_node, []

    def counted(parser, remaining):
        tokens_lexed.append(remaining)
        return lex_one(parser, remaining)

    monkeypatch.setattr(ConditionExpressionParser, "_lex_one_node", counted)
    lexed = []
    uninstall = motocache.install()
    try:
        for _ in range(2):
            for expression in expressions:
                tokens = ConditionExpressionParser(expression, {}, {})._lex_condition_expression()
                lexed.append(list(tokens))
                tokens.clear()  # the parser consumes its deque: the next parse must get the tokens whole
    finally:
        uninstall()
    assert lexed == plain + plain
    assert len(plain[0]) > 10
    assert len(tokens_lexed) == len(set(tokens_lexed))  # the second round lexed nothing again


def shape(node):
    """A parse tree as nested (type, children) tuples: moto's nodes do not compare by value."""
    children = getattr(node, "children", None)
    return repr(node) if children is None else (type(node).__name__, tuple(shape(child) for child in children))


def test_the_update_parser_parses_each_expression_once_into_the_tree_moto_builds():
    expressions = ["SET #status = :done, #result = :result", "SET lease_until = :until", "REMOVE a SET b = b + :one"]
    plain = [shape(UpdateExpressionParser.make(e)) for e in expressions]
    uninstall = motocache.install()
    try:
        first = [UpdateExpressionParser.make(e) for e in expressions]
        again = [UpdateExpressionParser.make(e) for e in expressions]
    finally:
        uninstall()
    assert [shape(tree) for tree in first] == plain
    assert all(tree is same for tree, same in zip(first, again))  # the second round parsed nothing
    assert plain[0][0] == "UpdateExpression" and len(str(plain)) > 200


TABLE = {"TableName": "records", "BillingMode": "PAY_PER_REQUEST",
         "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
         "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                  {"AttributeName": "sk", "AttributeType": "S"}]}
CLAIM = "attribute_not_exists(pk) OR expires_at < :now OR (#status = :inprogress AND lease_until < :now)"
WRITES = [  # (operation, arguments): conditional writes that pass, fail on the condition, or are refused
    ("put_item", {"Item": {"pk": {"S": "k"}, "sk": {"S": "c"}, "status": {"S": "INPROGRESS"}, "owner": {"S": "o1"},
                           "lease_until": {"N": "130"}, "expires_at": {"N": "3700"}},
                  "ConditionExpression": CLAIM, "ExpressionAttributeNames": {"#status": "status"},
                  "ExpressionAttributeValues": {":now": {"N": "100"}, ":inprogress": {"S": "INPROGRESS"}}}),
    ("put_item", {"Item": {"pk": {"S": "k"}, "sk": {"S": "c"}, "owner": {"S": "o2"}},
                  "ConditionExpression": CLAIM, "ExpressionAttributeNames": {"#status": "status"},
                  "ExpressionAttributeValues": {":now": {"N": "101"}, ":inprogress": {"S": "INPROGRESS"}}}),
    ("put_item", {"Item": {"pk": {"S": "k"}, "sk": {"S": "c"}, "owner": {"S": "o3"}},
                  "ConditionExpression": CLAIM, "ExpressionAttributeNames": {"#status": "status", "#unused": "x"},
                  "ExpressionAttributeValues": {":now": {"N": "101"}, ":inprogress": {"S": "INPROGRESS"}}}),
    ("update_item", {"Key": {"pk": {"S": "k"}, "sk": {"S": "c"}}, "ConditionExpression": "#owner = :owner",
                     "UpdateExpression": "SET #status = :done, #result = :result REMOVE lease_until",
                     "ExpressionAttributeNames": {"#owner": "owner", "#status": "status", "#result": "result"},
                     "ExpressionAttributeValues": {":owner": {"S": "o2"}, ":done": {"S": "COMPLETED"},
                                                   ":result": {"S": "{}"}}}),
    ("update_item", {"Key": {"pk": {"S": "k"}, "sk": {"S": "c"}}, "ConditionExpression": "#owner = :owner",
                     "UpdateExpression": "SET #status = :done, #result = :result REMOVE lease_until",
                     "ExpressionAttributeNames": {"#owner": "owner", "#status": "status", "#result": "result"},
                     "ExpressionAttributeValues": {":owner": {"S": "o1"}, ":done": {"S": "COMPLETED"},
                                                   ":result": {"S": "{\"n\": 1}"}}}),
    ("update_item", {"Key": {"pk": {"S": "k"}, "sk": {"S": "c"}}, "UpdateExpression": "SET pk = :other",
                     "ExpressionAttributeValues": {":other": {"S": "z"}}}),
    ("update_item", {"Key": {"pk": {"S": "n"}, "sk": {"S": "c"}}, "ConditionExpression": "attribute_not_exists(pk)",
                     "UpdateExpression": "SET tokens = if_not_exists(tokens, :zero) + :one, seen = list_append(:l, :l)",
                     "ExpressionAttributeValues": {":zero": {"N": "0"}, ":one": {"N": "1"},
                                                   ":l": {"L": [{"S": "a"}]}}}),
    ("delete_item", {"Key": {"pk": {"S": "k"}, "sk": {"S": "c"}}, "ConditionExpression": "#owner = :owner",
                     "ExpressionAttributeNames": {"#owner": "owner"},
                     "ExpressionAttributeValues": {":owner": {"S": "o9"}}}),
]


def dynamodb_story() -> list:
    """Each of WRITES twice on a fresh in-process moto, then the table: what each answered or the error it raised."""
    import boto3
    from moto import mock_aws

    answers = []
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(**TABLE)
        for operation, arguments in WRITES + WRITES:
            try:
                response = getattr(dynamodb, operation)(TableName="records", ReturnValues="ALL_OLD", **arguments)
                answers.append(response.get("Attributes"))
            except dynamodb.exceptions.ClientError as error:
                answers.append(error.response["Error"])
        answers.append(sorted(dynamodb.scan(TableName="records")["Items"], key=repr))
    return answers


def test_conditional_writes_answer_and_store_exactly_as_moto_does_with_the_dynamodb_shortcuts():
    plain = dynamodb_story()
    uninstall = motocache.install()
    try:
        shortcut = dynamodb_story()
    finally:
        uninstall()
    assert shortcut == plain
    codes = [answer.get("Code") for answer in plain[:len(WRITES)] if answer and "Code" in answer]
    assert codes.count("ConditionalCheckFailedException") >= 2 and "ValidationException" in codes


def test_the_condition_parser_parses_each_expression_and_values_once_and_notes_what_it_found():
    names, values = {"#status": "status"}, {":now": {"N": "100"}, ":inprogress": {"S": "INPROGRESS"}}
    plain = ConditionExpressionParser(CLAIM, names, values)
    plain_tree = plain.parse()
    uninstall = motocache.install()
    try:
        parsers = [ConditionExpressionParser(CLAIM, dict(names), dict(values)) for _ in range(2)]
        trees = [parser.parse() for parser in parsers]
        other = ConditionExpressionParser(CLAIM, names, {**values, ":now": {"N": "101"}}).parse()
        empty = ConditionExpressionParser(None, {}, {}).parse()
    finally:
        uninstall()
    assert trees[0] is trees[1] and repr(trees[0]) == repr(plain_tree)  # the second parse was the first's
    assert repr(other) != repr(plain_tree)
    assert all((p.expr_attr_names_found, p.expr_attr_values_found) ==
               (plain.expr_attr_names_found, plain.expr_attr_values_found) for p in parsers)
    assert plain.expr_attr_names_found == ["pk", "expires_at", "#status", "lease_until"]
    assert plain.expr_attr_values_found == [":now", ":inprogress", ":now"] and type(empty).__name__ == "OpDefault"


def condition(node):
    """A condition tree as nested tuples of its classes and attributes: moto's do not compare by value."""
    if isinstance(node, (list, tuple)):
        return tuple(condition(child) for child in node)
    if hasattr(node, "__dict__"):
        return type(node).__name__, tuple((name, condition(value)) for name, value in sorted(vars(node).items()))
    return node


def test_new_values_for_a_known_condition_skip_the_grammar_and_build_the_condition_moto_builds(monkeypatch):
    names = {"#status": "status"}
    values = [{":now": {"N": str(n)}, ":inprogress": {"S": "INPROGRESS"}} for n in range(3)]
    others = [("size(#status) > :now AND NOT begins_with(pk, :inprogress) OR sk IN (:now, :inprogress)", names),
              ("#status BETWEEN :now AND :inprogress", names), ("attribute_exists(x.y[2])", {})]

    def parsed(expression, names, values):
        parser = ConditionExpressionParser(expression, names, values)
        try:
            tree = parser.parse()
        except Exception as error:  # moto's own refusal
            return type(error).__name__, str(error)
        return condition(tree), parser.expr_attr_names_found, parser.expr_attr_values_found

    cases = ([(CLAIM, names, v) for v in values] + [(e, n, values[1]) for e, n in others]
             + [(CLAIM, names, {":now": {"N": "1"}}), (CLAIM, {}, values[0]), ("(a = :now)) OR", {}, values[0])])
    grammar_passes = []
    apply_between = ConditionExpressionParser._apply_between
    monkeypatch.setattr(ConditionExpressionParser, "_apply_between",
                        lambda parser, nodes: grammar_passes.append(1) or apply_between(parser, nodes))
    plain = [parsed(*case) for case in cases]
    plain_passes = len(grammar_passes)
    uninstall = motocache.install()
    try:
        shortcut = [parsed(*case) for case in cases]
    finally:
        uninstall()
    assert shortcut == plain
    assert len({answer[0] for answer in plain[:3]}) == 3  # each value went into its condition
    assert plain[-3][0] == plain[-2][0] == "KeyError" and len(plain[-1]) == 2  # unknown value, name; bad syntax
    assert (plain_passes, len(grammar_passes) - plain_passes) == (7, 6)  # CLAIM's grammar ran once, not thrice


def graph(root):
    """An object graph as a list of its objects' types and contents, each object named by the order it was
    reached in: two graphs compare equal when they have the same shape, shared and cyclic references included."""
    order, listed = {}, []

    def name(x):
        if isinstance(x, (str, int, float, bool, type(None))):
            return x
        if id(x) not in order:
            order[id(x)] = len(order)
            listed.append(x)
        return ("#", order[id(x)])

    name(root)
    described = []
    for x in listed:  # grows while it is read
        items = vars(x).items() if hasattr(x, "__dict__") else (x.items() if isinstance(x, dict) else enumerate(x))
        described.append((type(x).__name__, [(key, name(value)) for key, value in items]))
    return described


def test_the_validator_copies_a_memoised_update_tree_from_its_pickle_as_deepcopy_copies_it():
    import copy

    import moto.dynamodb.parsing.validators as validators

    expressions = ["SET #status = :done, #result = :result REMOVE lease_until",
                   "SET tokens = if_not_exists(tokens, :zero) + :one, seen = list_append(:l, :l)"]
    uninstall = motocache.install()
    try:
        trees = [UpdateExpressionParser.make(e) for e in expressions]
        copies = [validators.deepcopy(tree) for tree in trees]
        others = [validators.deepcopy(x) for x in ({"L": [{"S": "a"}]}, [trees[0]])]
        kept = [motocache.PICKLED_TREES[id(tree)][0] is tree for tree in trees]
    finally:
        uninstall()
    assert kept == [True, True] and not motocache.PICKLED_TREES and validators.deepcopy is copy.deepcopy
    for tree, copied in zip(trees, copies):
        assert copied is not tree and shape(copied) == shape(tree)
        assert graph(copied) == graph(copy.deepcopy(tree))  # the same graph, shared and cyclic parts too
    assert others[0] == {"L": [{"S": "a"}]} and others[1][0] is not trees[0]  # anything else: deepcopy


def test_the_memoised_url_quoting_answers_as_werkzeug_does_and_builds_the_same_request():
    import werkzeug.sansio.utils
    import werkzeug.test
    import werkzeug.urls
    from botocore.awsrequest import AWSPreparedRequest
    from moto.core.request import normalize_request

    iris = ["https://dynamodb.us-east-1.amazonaws.com", "/", "/123456789012/q%2Fx",
            "http://\u2603.net/p\xe5th?q=\xe8ry%DF", "http://user:@h\xe5st:0/a b", ""]
    uris = ["https://sqs.us-east-1.amazonaws.com/", "http://xn--n3h.net/p%C3%A5th?q=%C3%A8ry%DF", "/%2F%zz", ""]
    request = AWSPreparedRequest("POST", "https://sqs.us-east-1.amazonaws.com/123456789012/q?a=1",
                                 {"Content-Type": "application/x-amz-json-1.0",
                                  "X-Amz-Target": "AmazonSQS.SendMessage"},
                                 b'{"QueueUrl": "q"}', False)

    def seen(built):
        objects = {key: repr(built.environ[key]) for key in ("werkzeug.request",) if key in built.environ}
        return built.environ | {"wsgi.input": None} | objects, built.raw_url, built.url_root, built.data

    plain = ([werkzeug.urls.iri_to_uri(i) for i in iris], [werkzeug.urls.uri_to_iri(u) for u in uris],
             seen(normalize_request(request)))
    uninstall = motocache.install()
    try:
        memoised = [([werkzeug.test.iri_to_uri(i) for i in iris], [werkzeug.sansio.utils.uri_to_iri(u) for u in uris],
                     seen(normalize_request(request))) for _ in range(2)]
        hits = (werkzeug.test.iri_to_uri.cache_info().hits, werkzeug.sansio.utils.uri_to_iri.cache_info().hits)
    finally:
        uninstall()
    assert memoised == [plain, plain]
    assert hits[0] >= len(iris) + 2 and hits[1] >= len(uris) + 1  # the second round quoted nothing again
    assert werkzeug.test.iri_to_uri is werkzeug.urls.iri_to_uri
    assert werkzeug.sansio.utils.uri_to_iri is werkzeug.urls.uri_to_iri


def test_moto_s_random_strings_and_receipt_handles_are_drawn_exactly_as_moto_draws_them():
    import random

    import moto.sqs.utils
    from moto.moto_api._internal import mock_random
    from moto.moto_api._internal.moto_random import MotoRandom

    class Floats(MotoRandom):  # draws through random(), not getrandbits: moto's own code draws it
        def random(self):
            return 0.5

    arguments = [(52, True, False), (20, True, True), (7, False, False), (1, False, True), (0, True, False)]

    def drawn(module):
        strings = [rng.get_random_string(*a) for rng in (MotoRandom(7), Floats(7)) for a in arguments]
        mock_random.seed(11)
        handles = [module.generate_receipt_handle() for _ in range(3)]
        return strings, handles, mock_random.getstate()

    state = mock_random.getstate()
    try:
        plain = drawn(moto.sqs.utils)
        uninstall = motocache.install()
        try:
            shortcut = drawn(moto.sqs.models)
        finally:
            uninstall()
    finally:
        mock_random.setstate(state)
    assert shortcut == plain
    assert len(plain[0][0]) == 52 and len(plain[1][0]) == 185 and set(plain[1][0]) <= set("abcdefghijklmnopqrstuvwxyz")
    assert MotoRandom.get_random_string.__qualname__ == "MotoRandom.get_random_string"
    assert Floats._randbelow is not random.Random._randbelow_with_getrandbits  # so Floats' strings were moto's


def test_a_shortcut_whose_moto_function_is_gone_names_it_and_moto_s_version_and_installs_nothing(monkeypatch):
    gone = ("moto.sqs.models", "SQSBackend", "a_method_moto_renamed", lambda original: original)
    monkeypatch.setattr(motocache, "REPLACED", (*motocache.REPLACED, gone))
    with pytest.raises(BackendUnavailable) as refused:
        motocache.install()
    message = str(refused.value)
    assert f"moto {moto.__version__} has no moto.sqs.models.SQSBackend.a_method_moto_renamed" in message
    assert "moto[server]==" in message and "make venv" in message
    assert [vars(owner)[name] for owner, name in replaced()[:-1]] == REPLACED_ORIGINALS  # nothing replaced
    assert not any(hasattr(getattr(owner, name), "cache_info") for owner, name in CACHED)  # nothing memoised
