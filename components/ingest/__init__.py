"""What every dataset's ingest shares: the Beam pipeline (beam_ingest.py) and the stages around it: the staging
folder and its files, where a record goes, the Beam options, the executors' shared checks and summary, source
files and their chunks, and TFRecord files."""
