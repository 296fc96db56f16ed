/** The console's entry point: the styles (uPlot's and ours, bundled into app.css) and the app mounted on #app. */
import { render } from 'preact';
import 'uplot/dist/uPlot.min.css';
import './app.css';
import { App } from './app';

const root = document.getElementById('app');
if (root !== null) render(<App />, root);
