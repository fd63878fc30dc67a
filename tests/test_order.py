"""Natural order of names (rfbench._order): numbers inside names compare by value; a total order."""

import random

from rfbench._order import listing_key, natural_key, natural_sorted


def test_numbers_in_names_compare_by_value():
    assert natural_sorted(["10", "2", "1", "11", "3"]) == ["1", "2", "3", "10", "11"]
    assert natural_sorted(["a10", "a9", "b1", "a"]) == ["a", "a9", "a10", "b1"]
    assert natural_sorted(["Draw-10", "Draw-9", "Clap"]) == ["Clap", "Draw-9", "Draw-10"]


def test_names_without_digits_and_zero_padded_numbers_keep_the_text_order():
    names = ["Push&Pull", "Clap", "Sweep", "Draw-O(Horizontal)", "Slide", "clap"]
    assert natural_sorted(names) == sorted(names)
    padded = [f"A{k:02d}" for k in range(1, 28)]
    random.Random(0).shuffle(padded)
    assert natural_sorted(padded) == sorted(padded)


def test_the_order_is_total_and_long_digit_runs_are_exact():
    # "01" and "1" have the same value but are different names: never equal, always in the same order
    assert natural_key("01") != natural_key("1") and natural_sorted(["1", "01"]) == natural_sorted(["01", "1"])
    big = "9" * 5000  # longer than int() converts by default: compared digit by digit
    assert natural_sorted([big + "1", big, "10"]) == ["10", big, big + "1"]
    names = sorted({f"{a}{n}{b}" for a in ("", "x", "x-") for n in ("", "0", "1", "2", "10", "007")
                    for b in ("", "a", "1")})
    shuffled = list(names)
    random.Random(1).shuffle(shuffled)
    assert natural_sorted(shuffled) == natural_sorted(names) and len(set(map(natural_key, names))) == len(names)


def test_listing_puts_numbers_first_then_names_then_none():
    assert sorted([None, "b10", 3, "b9", 1.5, True], key=listing_key) == [True, 1.5, 3, "b9", "b10", None]
