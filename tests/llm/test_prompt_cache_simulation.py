"""The simulated prompt caches (llm.engine.prompt_cache) and the offline provider's usage
through them: pure, no server, no database."""

from llm.engine.chat import ChatRequest, Message, ToolSpec, Usage
from llm.engine.prompt_cache import Block, PromptCache
from llm.engine.providers.offline import cached_usage, prompt_blocks

STABLE = "x" * 8000  # 2,000 tokens at 4 characters a token


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_anthropic_writes_a_marked_prefix_first_and_reads_it_after():
    cache = PromptCache()
    blocks = [Block(STABLE, breakpoint=True), Block("question one")]

    first = cache.marked("m", blocks)
    second = cache.marked("m", [blocks[0], Block("question two")])

    assert (first.cached_tokens, first.cache_write_tokens) == (0, 2000)
    assert (second.cached_tokens, second.cache_write_tokens) == (2000, 0)
    assert second.input_tokens == 2000 + len("question two") // 4


def test_a_conversation_reads_the_previous_turn_from_its_moved_breakpoint():
    cache = PromptCache()
    turns = [Block(STABLE, breakpoint=True)]
    reads, writes = [], []
    for turn in range(4):
        turns = [*turns[:-1], Block(turns[-1].text), Block(f"turn {turn} " * 52, breakpoint=True)]
        usage = cache.marked("m", turns)
        reads.append(usage.cached_tokens)
        writes.append(usage.cache_write_tokens)

    assert reads[0] == 0 and writes[0] > 2000
    # Each later turn reads all of the turn before and writes only its new message.
    assert all(reads[n] == reads[n - 1] + writes[n - 1] for n in range(1, 4))
    assert writes[1:] == [len("turn 1 " * 52) // 4] * 3


def test_a_prefix_further_back_than_the_lookback_is_not_found():
    cache = PromptCache()
    cache.marked("m", [Block(STABLE, breakpoint=True)])
    later = [Block(STABLE), *[Block("more") for _ in range(25)]]
    later[-1] = Block("more", breakpoint=True)

    assert cache.marked("m", later).cached_tokens == 0


def test_unmarked_and_short_prompts_are_never_cached_by_anthropic():
    cache = PromptCache()
    for _ in range(2):
        unmarked = cache.marked("m", [Block(STABLE)])
        short = cache.marked("m", [Block("y" * 4000, breakpoint=True)])  # 1,000 tokens

    assert unmarked.cached_tokens == unmarked.cache_write_tokens == 0
    assert short.cached_tokens == short.cache_write_tokens == 0


def test_entries_lapse_after_five_minutes_unless_read():
    clock = Clock()
    cache = PromptCache(clock=clock)
    blocks = [Block(STABLE, breakpoint=True)]
    cache.marked("m", blocks)

    clock.now = 299
    assert cache.marked("m", blocks).cached_tokens == 2000  # read: refreshed until 599
    clock.now = 598
    assert cache.marked("m", blocks).cached_tokens == 2000
    clock.now = 598 + 301
    lapsed = cache.marked("m", blocks)
    assert (lapsed.cached_tokens, lapsed.cache_write_tokens) == (0, 2000)


def test_each_model_has_a_cache_of_its_own():
    cache = PromptCache()
    cache.marked("one", [Block(STABLE, breakpoint=True)])

    assert cache.marked("two", [Block(STABLE, breakpoint=True)]).cached_tokens == 0
    assert cache.automatic("two", STABLE).cached_tokens == 0


def test_openai_caches_repeated_prefixes_in_steps_of_128_tokens_past_1024():
    cache = PromptCache()
    prompt = STABLE + "tail of the first call"

    first = cache.automatic("m", prompt)
    second = cache.automatic("m", STABLE + "another tail")
    short = [cache.automatic("m", "z" * 4000) for _ in range(2)][-1]

    assert first.cached_tokens == 0 and first.cache_write_tokens == 0
    assert second.cached_tokens == 1024 + 7 * 128  # 1,920: the last full step inside 2,000
    assert second.cache_write_tokens == 0  # OpenAI bills no writes
    assert short.cached_tokens == 0  # under 1,024 tokens


def _turn(messages, **fields):
    tools = (ToolSpec("lookup", "Looks a record up. " * 100, {"type": "object"}),)
    return ChatRequest(
        model="offline/careful", purpose="assistant", system="Be careful. " * 200,
        messages=tuple(messages), tools=tools, **fields,
    )  # fmt: skip


def test_the_offline_provider_marks_what_anthropics_adapter_marks():
    blocks = prompt_blocks(
        _turn([Message("user", "RUBRIC. CONVERSATION")], cache_prefix_chars=7, cache_latest=True)
    )

    assert [block.breakpoint for block in blocks] == [True, True, True, True]
    assert blocks[2].text == "user:RUBRIC." and blocks[3].text == " CONVERSATION"
    assert [b.breakpoint for b in prompt_blocks(_turn([Message("user", "hi")]))] == [
        True, True, False,
    ]  # fmt: skip


def test_the_offline_usage_carries_the_simulated_shares_of_the_scripts_count():
    cache = PromptCache()
    messages = [Message("user", "Hello, I need help. " * 20)]
    first = cached_usage(_turn(messages, cache_latest=True), Usage(1000, 50), cache)
    messages += [Message("assistant", "Sure. " * 20), Message("user", "Thanks. " * 20)]
    second = cached_usage(_turn(messages, cache_latest=True), Usage(1200, 50), cache)

    assert first.cached_input_tokens == 0 and 900 < first.cache_write_tokens <= 1000
    assert 1000 < second.cached_input_tokens < 1200
    assert second.cached_input_tokens + second.cache_write_tokens <= 1200
    assert second.output_tokens == 50


def test_the_table_is_swept_of_lapsed_entries_and_kept_bounded(monkeypatch):
    from llm.engine import prompt_cache

    monkeypatch.setattr(prompt_cache, "SWEEP_EVERY", 10)
    monkeypatch.setattr(prompt_cache, "MAX_ENTRIES", 20)
    clock = Clock()
    cache = PromptCache(clock=clock, min_tokens=1)
    for n in range(15):
        cache.marked("m", [Block(f"old {n:04}", breakpoint=True)])
    clock.now = 1000  # every entry so far has lapsed
    for n in range(60):
        clock.now += 1
        cache.marked("m", [Block(f"new {n:04}", breakpoint=True)])

    # At most MAX_ENTRIES after a sweep, and SWEEP_EVERY more before the next one.
    assert len(cache._expires) <= 20 + 10
    # The newest entries survive the eviction and are still read.
    assert cache.marked("m", [Block("new 0059", breakpoint=True)]).cached_tokens == 2
