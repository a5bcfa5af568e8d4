"""Writing skills, profiles and settings into a temporary MC_HOME and workspace."""

from pathlib import Path


def skill(base: Path, name: str, description: str = "", body: str = "", folder: str = "") -> Path:
    directory = base / "skills" / (folder or name)
    directory.mkdir(parents=True, exist_ok=True)
    front = f"---\nname: {name}\ndescription: {description or 'Does ' + name}\n---\n"
    (directory / "SKILL.md").write_text(front + (body or f"BODY OF {name.upper()}") + "\n")
    return directory


def profile(base: Path, name: str, front: str, body: str = "") -> Path:
    directory = base / "agents"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.md"
    path.write_text(f"---\n{front}\n---\n{body or 'PROFILE ' + name.upper()}\n")
    return path


def trust(home: Path, workspace: Path, settings: str = "") -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.toml").write_text(
        f'{settings}\n[permissions]\ntrusted_projects = ["{workspace}"]\n'
    )
