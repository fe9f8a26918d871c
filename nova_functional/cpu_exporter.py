"""A Prometheus exporter of per-host CPU utilisation in a process of its
own (the tests' process runs under eventlet, where an exporter's server
loop would block every green thread): serves
``host_cpu_utilisation{instance="<host>:9100"}`` from the JSON file
{host: percent} named on its command line, read at each scrape.

    python cpu_exporter.py VALUES_FILE PORT
"""
import http.server
import json
import sys


def main(values_file, port):
    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            with open(values_file) as source:
                values = json.load(source)
            body = ''.join(
                'host_cpu_utilisation{instance="%s:9100"} %s\n'
                % (host, float(value)) for host, value in values.items())
            body = ('# TYPE host_cpu_utilisation gauge\n' + body).encode()
            self.send_response(200)
            self.send_header('Content-Type', 'text/plain; version=0.0.4')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    http.server.HTTPServer(('127.0.0.1', int(port)),
                           Metrics).serve_forever()


if __name__ == '__main__':
    main(*sys.argv[1:])
