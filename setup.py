"""Installs the repository's top-level folders under one import name: pipeline/ → kflow.pipeline, and so on.

Everything else is declared in pyproject.toml; setuptools' `package_dir` mapping needs the package
list spelled out with its `kflow.` prefix, which is computed here from the folders.
"""

from setuptools import find_namespace_packages, setup

FOLDERS = ("pipeline", "components", "schemas")

packages = [
    f"kflow.{folder}{'.' + sub if sub else ''}"
    for folder in FOLDERS
    for sub in ["", *find_namespace_packages(where=folder, exclude=["*__pycache__*"])]
]
setup(packages=packages, package_dir={f"kflow.{folder}": folder for folder in FOLDERS})
