# The firstfault image for real deployments (docker-compose.yml); the local tests run without Docker.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY schemas ./schemas
COPY ingest ./ingest
COPY correlate ./correlate
COPY api ./api
COPY benchmarks ./benchmarks
COPY samples ./samples
RUN pip install --no-cache-dir . && useradd --system --uid 10001 firstfault && mkdir -p /data && chown firstfault /data
USER firstfault
ENV FIRSTFAULT_LAKE=/data/lake FIRSTFAULT_STATE_DIR=/data/state FIRSTFAULT_API_HOST=0.0.0.0
EXPOSE 8080
ENTRYPOINT ["firstfault"]
CMD ["run"]
