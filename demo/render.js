// Render perf's flame-graph HTML in headless Chromium (Debian's), wait until
// d3-flame-graph has drawn its labels, then write a PNG of the page and the
// names of the frames whose labels are visible, one a line.
//
//   node demo/render.js FLAMEGRAPH.html OUT.png OUT.labels
'use strict';
const path = require('path');
const fs = require('fs');
const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');

async function main() {
	const [html, png, labels] = process.argv.slice(2);
	if (!labels) {
		console.error('usage: render.js FLAMEGRAPH.html OUT.png OUT.labels');
		process.exit(2);
	}
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
	});
	try {
		const page = await browser.newPage({ viewport: { width: 1600, height: 600 } });
		// No network: the page must be whole by itself.
		await page.route(/^(?!file:)/, (route) => route.abort());
		await page.goto('file://' + path.resolve(html));
		// Labels get their text at the end of a transition.
		await page.waitForFunction(() => {
			const shown = [...document.querySelectorAll('div.d3-flame-graph-label')]
				.filter((d) => d.style.display !== 'none');
			return shown.length > 0 && shown.every((d) => d.textContent.length > 0);
		}, null, { timeout: 30000 });
		await page.waitForTimeout(500);
		const names = await page.$$eval('div.d3-flame-graph-label', (divs) =>
			divs.filter((d) => d.style.display !== 'none' && d.offsetWidth > 0)
				.map((d) => d.textContent));
		const chart = await page.$('#chart') || page;
		await chart.screenshot({ path: png });
		fs.writeFileSync(labels, names.join('\n') + '\n');
	} finally {
		await browser.close();
	}
}

main().catch((err) => {
	console.error(err.message || err);
	process.exit(1);
});
