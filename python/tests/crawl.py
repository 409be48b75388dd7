"""Runs one Scrapy crawl of the test site in this process:
``python crawl.py SETTINGS_JSON``. Settings are Scrapy settings, plus
``START_URL`` and ``TEST_CLOCK_NOW`` (seconds: a ManualClock at that time
becomes ROTABLOOM_CLOCK). Prints the crawl's stats as JSON."""

import json
import sys

import scrapy
from scrapy.crawler import CrawlerProcess

import rotabloom


class SiteSpider(scrapy.Spider):
    name = "site"

    def parse(self, response):
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.parse)


def main():
    settings = json.loads(sys.argv[1])
    start = settings.pop("START_URL")
    now = settings.pop("TEST_CLOCK_NOW", None)
    if now is not None:
        settings["ROTABLOOM_CLOCK"] = rotabloom.ManualClock(now)
    settings.setdefault("LOG_LEVEL", "WARNING")
    settings.setdefault("ROBOTSTXT_OBEY", False)
    settings.setdefault("TELNETCONSOLE_ENABLED", False)
    settings.setdefault("CONCURRENT_REQUESTS", 16)
    settings.setdefault("DUPEFILTER_CLASS", "rotabloom.scrapy.RFPDupeFilter")
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler, start_urls=[start])
    process.start()
    stats = {k: v for k, v in crawler.stats.get_stats().items() if isinstance(v, (int, float, str))}
    print(json.dumps(stats))


if __name__ == "__main__":
    main()
